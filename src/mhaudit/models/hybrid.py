"""BERT+LSTM hybrids (the Bluesky paper's two hybrid SI models): encoder token states -> BiLSTM -> head.

* `bert-lstm`: the BiLSTM's outputs are mean- and max-pooled (`mhaudit.models.lstm_head.LSTMHead`).
* `bert-lstm-attention`: additive (Bahdanau) attention over the BiLSTM outputs;
  `attention_weights(texts)` returns its weights alpha.

Training follows the paper's hybrid settings (section "Benchmarking"): Adam, lr 1e-3, weight decay 1e-4,
batch 16, early stopping with patience 3 over at most 5 epochs. The paper does not say whether the
encoder was frozen; we freeze it by default (`freeze_encoder=True`): an lr of 1e-3 is a head's learning
rate (fine-tuning a BERT at 1e-3 diverges), and a frozen encoder lets `fit` run it once over the
training and validation texts and train the BiLSTM on the cached token states, which on a CPU makes
the hybrids cheaper than fine-tuning. With `freeze_encoder=False` the encoder is fine-tuned too, at
`encoder_lr` (2e-5, the paper's transformer rate) in its own Adam parameter group, and runs every step.

Early stopping on the validation rows (split 'val') and the kept epoch are the transformer's: both train in
`mhaudit.models.training_loop`.

Padding: the hybrid pads on the right whatever the tokenizer says (its own encoder calls), so a row's
real tokens are its first `length` positions, as `LSTMHead` expects.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, AutoTokenizer

from mhaudit.core.errors import InputError, first_line
from mhaudit.core.progress import Progress
from mhaudit.models.base import register_with_defaults
from mhaudit.models.checkpoints import (
    HF_DIR,
    check_max_length,
    ensure_pad_token,
    position_limit,
    quiet_transformers,
    resolve_checkpoint,
    save_pretrained,
)
from mhaudit.models.lstm_head import LSTMHead
from mhaudit.models.torch_data import longest_first, pad_batch, training_split
from mhaudit.models.torch_runtime import TorchClassifier, in_batches, is_out_of_memory, seed_everything
from mhaudit.models.training_loop import NO_VALIDATION, TrainingRun, train_epochs

HEAD_FILE = "hybrid-head.pt"


@register_with_defaults("bert-lstm")
@register_with_defaults("bert-lstm-attention", attention=True)
class HybridClassifier(TorchClassifier):
    """Encoder (any Hugging Face encoder: 'minilm', a folder or a hub id) + BiLSTM head; raw logits.

    After `fit` or `load_model`: `encoder`, `tokenizer`, `head` (an `LSTMHead`), `history` (one dict per
    epoch: epoch, train_loss, val_macro_f1, seconds, kept), `best_epoch`, `notes`, and `encode_seconds`
    (time spent running the frozen encoder over the training and validation texts, included in fit).
    """

    STATE_FILE = "hybrid-history.json"

    def __init__(
        self,
        *,
        checkpoint: str = "minilm",
        max_length: int = 64,
        attention: bool = False,
        lstm_hidden: int = 128,
        lstm_layers: int = 1,
        dropout: float = 0.1,
        freeze_encoder: bool = True,
        encoder_lr: float = 2e-5,
        lr: float = 1e-3,
        weight_decay: float = 1e-4,
        max_grad_norm: float = 0.0,
        epochs: int = 5,
        patience: int = 3,
        batch_size: int = 16,
        eval_batch_size: int = 64,
        seed: int = 42,
        device: str = "auto",
    ):
        self._setup(
            "hybrid",
            device,
            max_length=max_length,
            lstm_hidden=lstm_hidden,
            lstm_layers=lstm_layers,
            epochs=epochs,
            batch_size=batch_size,
            eval_batch_size=eval_batch_size,
        )
        if lr <= 0 or encoder_lr <= 0 or weight_decay < 0 or max_grad_norm < 0 or not 0 <= dropout < 1:
            raise InputError(
                "hybrid options lr and encoder_lr must be > 0, weight_decay and max_grad_norm >= 0, dropout in [0, 1)"
            )
        if not isinstance(patience, int) or patience < 0:
            raise InputError(
                f"hybrid option patience must be a non-negative integer (0: never stop early), got {patience!r}"
            )
        for key, value in dict(attention=attention, freeze_encoder=freeze_encoder).items():
            if not isinstance(value, (bool, np.bool_)):  # bool('False') is True: a string must not pass
                raise InputError(f"hybrid option {key} must be true or false, got {value!r}")
        self.checkpoint, self.max_length, self.attention = str(checkpoint), max_length, bool(attention)
        self.lstm_hidden, self.lstm_layers, self.dropout = lstm_hidden, lstm_layers, dropout
        self.freeze_encoder, self.encoder_lr = bool(freeze_encoder), encoder_lr
        self.lr, self.weight_decay = lr, weight_decay
        self.max_grad_norm, self.epochs, self.patience = max_grad_norm, epochs, patience
        self.batch_size, self.eval_batch_size, self.seed = batch_size, eval_batch_size, seed
        self.name = "bert-lstm-attention" if attention else "bert-lstm"
        self.encoder: Any = None  # once fitted or loaded: a transformers encoder, of the class the checkpoint names
        self.head: Any = None  # an LSTMHead once fitted or loaded; None before
        self.encode_seconds = 0.0

    # ------------------------------------------------------------------ building blocks
    def _load_encoder(self, source: str) -> None:
        try:
            with quiet_transformers():
                encoder = AutoModel.from_pretrained(source)
                tokenizer = AutoTokenizer.from_pretrained(source)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load encoder '{self.checkpoint}' ({first_line(exc)})") from None
        check_max_length(self.max_length, position_limit(encoder.config, tokenizer), self.checkpoint)
        ensure_pad_token(tokenizer, self.checkpoint, self.notes)
        self.encoder, self.tokenizer = encoder.float().to(self.device).eval(), tokenizer
        if self.freeze_encoder:
            self.encoder.requires_grad_(False)

    def _new_head(self, num_labels: int) -> LSTMHead:
        return LSTMHead(
            self.encoder.config.hidden_size,
            num_labels,
            hidden=self.lstm_hidden,
            layers=self.lstm_layers,
            dropout=self.dropout,
            attention=self.attention,
        ).to(self.device)

    def _states(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoder token states (B, T, H) float32 and the right-padded mask (B, T) for token id lists."""
        input_ids, mask = pad_batch(ids, self.tokenizer.pad_token_id, "right")
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            states = self.encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state
        return states.float(), mask.bool()

    def _cache(self, ids: list[list[int]]) -> list[torch.Tensor]:
        """The frozen encoder's token states per row (CPU, trimmed to the row's length), in input order."""
        out: list[torch.Tensor | None] = [None] * len(ids)

        def keep(index, states, mask, _weights=None):
            for row, i in enumerate(index):
                out[i] = states[row, : int(mask[row].sum())].cpu()

        self._batches(ids, keep, heads=False)
        return out  # type: ignore[return-value]  # keep() has filled every slot

    @staticmethod
    def _pad_states(rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        lengths = torch.tensor([len(r) for r in rows])
        states = nn.utils.rnn.pad_sequence(rows, batch_first=True)
        return states, torch.arange(states.shape[1])[None, :] < lengths[:, None]

    def _batches(self, ids: list[list[int]], consume, *, heads: bool) -> None:
        """Inference over `ids` in length-sorted batches of `eval_batch_size` (halved on out-of-memory);
        `consume(index, states_or_logits, mask, weights)` gets each batch's results."""
        order = longest_first(ids)
        self.head.eval()  # no dropout; training puts its modules back in train mode each epoch
        self.encoder.eval()

        def run(index):
            states, mask = self._states([ids[i] for i in index])
            if heads:
                logits, weights = self.head(states, mask)
                consume(
                    index,
                    logits.float().cpu().numpy(),
                    mask.cpu(),
                    None if weights is None else weights.float().cpu().numpy(),
                )
            else:
                consume(index, states, mask)

        with torch.no_grad():  # not inference_mode: cached states later feed the BiLSTM's backward pass
            in_batches(order, self.eval_batch_size, run, device=self.device, notes=self.notes)

    # ------------------------------------------------------------------ training
    def fit(self, train: pd.DataFrame, classes: list[str], *, progress: Progress | None = None) -> HybridClassifier:
        """Train on rows with split 'train'; rows with split 'val' choose the epoch (early stopping). Each epoch
        is a stage of `progress` whose steps are the batches."""
        classes = list(classes)
        (texts, codes), val, self.notes = training_split(train, classes)
        self.classes, self.history, self.best_epoch, self.encode_seconds = classes, [], None, 0.0
        seed_everything(self.seed)
        self._load_encoder(resolve_checkpoint(self.checkpoint))
        self.head = self._new_head(len(classes))
        self.notes.append(
            "encoder frozen: token states computed once, only the BiLSTM head trains"
            if self.freeze_encoder
            else f"encoder fine-tuned at lr {self.encoder_lr}"
        )
        self._train(texts, codes, val, progress)
        return self

    def _optimizer(self) -> torch.optim.Optimizer:
        groups = [{"params": list(self.head.parameters()), "lr": self.lr}]
        if not self.freeze_encoder:
            groups.append({"params": [p for p in self.encoder.parameters() if p.requires_grad], "lr": self.encoder_lr})
        return torch.optim.Adam(groups, lr=self.lr, weight_decay=self.weight_decay)

    def _train(self, texts: list[str], codes: np.ndarray, val, progress: Progress | None) -> None:
        ids = self._tokenize(texts)
        labels = torch.as_tensor(codes, dtype=torch.long)
        cached = val_cached = None
        if self.freeze_encoder:
            start = time.perf_counter()
            cached = self._cache(ids)
            if val is not None:
                val_cached = self._cache(self._tokenize(val[0]))
            self.encode_seconds = time.perf_counter() - start
        modules = {"head": self.head} if self.freeze_encoder else {"head": self.head, "encoder": self.encoder}
        self.best_epoch = train_epochs(
            TrainingRun(
                rows=len(ids),
                batch_size=self.batch_size,
                epochs=self.epochs,
                seed=self.seed,
                patience=self.patience,
                max_grad_norm=self.max_grad_norm,
                optimizer=self._optimizer(),
                modules=modules,
                batch_loss=lambda index: self._backward(ids, cached, labels, index.tolist()),
                val_macro_f1=None if val is None else lambda: self._val_macro_f1(val, val_cached),
                label=f"train {self.name} seed {self.seed}",
                progress=progress,
            ),
            self.history,
            self.notes,
        )
        if val is None:
            self.notes.append(NO_VALIDATION)

    def _backward(
        self, ids: list[list[int]], cached: list[torch.Tensor] | None, labels: torch.Tensor, index: list[int]
    ) -> float:
        """Forward and backward passes of one training batch (on the cached token states of a frozen
        encoder, else through the encoder); its mean loss. Out of memory is an InputError."""
        try:
            if cached is not None:
                states, mask = self._pad_states([cached[i] for i in index])
                states, mask = states.to(self.device), mask.to(self.device)
            else:
                states, mask = self._states([ids[i] for i in index])
            logits, _ = self.head(states, mask)
            loss = F.cross_entropy(logits.float(), labels[index].to(self.device))
            loss.backward()
        except (RuntimeError, MemoryError) as exc:
            if not is_out_of_memory(exc):
                raise
            raise InputError(
                f"out of memory while training the hybrid on {self.device} at batch size "
                f"{self.batch_size} (max_length {self.max_length}); lower batch_size or max_length"
            ) from None
        return loss.item()

    def _val_macro_f1(self, val, cached: list[torch.Tensor] | None) -> float:
        texts, codes = val
        if cached is None:
            predicted = self.predict_logits(texts).argmax(axis=1)
        else:
            self.head.eval()
            predicted = np.empty(len(cached), dtype=np.int64)
            with torch.no_grad():
                for start in range(0, len(cached), self.eval_batch_size):
                    states, mask = self._pad_states(cached[start : start + self.eval_batch_size])
                    logits, _ = self.head(states.to(self.device), mask.to(self.device))
                    predicted[start : start + len(states)] = logits.argmax(dim=1).cpu().numpy()
        return self._macro_f1(codes, predicted)

    # ------------------------------------------------------------------ inference
    def predict_logits(self, texts: list[str]) -> np.ndarray:
        """Raw logits (n, k), columns in class order (length-sorted batches, restored to input order)."""
        self._require_fitted()
        out = np.empty((len(texts), len(self.classes)), dtype=np.float64)
        if len(texts):

            def keep(index, logits, _mask, _weights):
                out[index] = logits

            self._batches(self._tokenize(list(texts)), keep, heads=True)
        return out

    def attention_weights(self, texts: list[str]) -> list[np.ndarray]:
        """Per text, the attention weight of each of its tokens (special tokens included; they sum to 1)."""
        self._require_fitted()
        if not self.attention:
            raise InputError(f"model '{self.name}' has no attention layer; use bert-lstm-attention")
        out: list[np.ndarray | None] = [None] * len(texts)

        def keep(index, _logits, mask, weights):
            for row, i in enumerate(index):
                out[i] = weights[row, : int(mask[row].sum())]

        self._batches(self._tokenize(list(texts)), keep, heads=True)
        return out  # type: ignore[return-value]  # keep() has filled every slot

    # ------------------------------------------------------------------ persistence
    def save_artifacts(self, directory: Path) -> None:
        """`hf/`: the encoder and tokenizer (save_pretrained); the head's weights and the history beside it."""
        self._require_fitted()
        directory = Path(directory)
        save_pretrained(directory, self.encoder, self.tokenizer)
        torch.save(self.head.state_dict(), directory / HEAD_FILE)
        self._save_state(directory, encode_seconds=self.encode_seconds)

    def load_artifacts(self, directory: Path) -> None:
        directory = Path(directory)
        hf = directory / HF_DIR
        if not (hf / "config.json").is_file() or not (directory / HEAD_FILE).is_file():
            raise InputError(
                f"no {HF_DIR}/config.json or {HEAD_FILE} here; expected a folder written by save_model", path=directory
            )
        self._load_encoder(str(hf))
        self.head = self._new_head(len(self.classes))
        try:
            self.head.load_state_dict(torch.load(directory / HEAD_FILE, map_location=self.device, weights_only=True))
        except RuntimeError as exc:
            raise InputError(
                f"the saved head does not fit these options ({first_line(exc)})", path=directory / HEAD_FILE
            ) from None
        self.head.eval()
        self.encode_seconds = self._load_state(directory).get("encode_seconds", 0.0)
