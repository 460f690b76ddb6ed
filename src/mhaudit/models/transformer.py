"""Transformer fine-tuning (PyTorch + Hugging Face transformers): the CPFE paper's training protocol.

`create("transformer")` fine-tunes a sequence classifier with a plain PyTorch loop as in the paper's
section 4.1: AdamW (lr 2e-5, weight decay 0.01, none on biases and norms), linear warm-up over 10% of
the steps then linear decay, gradient norm clipping at 1.0, at most five epochs with early stopping on
the validation macro-F1 (the best epoch's weights are kept), sequences truncated to 64 tokens.
Section 4.5: one seed controls Python, NumPy, PyTorch (CPU and CUDA) and transformers, so a seed gives
identical logits on CPU. Section 4.6: `adapt` fine-tunes a copy on a target platform's labelled rows.

`checkpoint` is "minilm", a local folder written by `save_pretrained`, or a Hugging Face hub id
(`mhaudit.models.checkpoints`). The epochs run in `mhaudit.models.training_loop`, shared with the
hybrids. The registry imports this module on first use, so the base install never imports torch.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
import transformers
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

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
from mhaudit.models.torch_data import longest_first, pad_batch, texts_and_codes, training_split
from mhaudit.models.torch_runtime import TorchClassifier, in_batches, is_out_of_memory, seed_everything
from mhaudit.models.training_loop import NO_VALIDATION, TrainingRun, train_epochs


@register_with_defaults("transformer")
class TransformerClassifier(TorchClassifier):
    """A fine-tuned Hugging Face sequence classifier; logits are the raw pre-softmax outputs.

    After `fit` or `load_model`: `hf_model` (an `AutoModelForSequenceClassification`, in eval mode, on
    `device`), `tokenizer`, `history` (one dict per epoch: stage, epoch, train_loss, val_macro_f1,
    seconds, train_seconds, lr, kept), `best_epoch` and `notes` (what was done that a reader should
    know: re-initialised heads, early stopping, out-of-memory retries).

    Out of memory: at inference a batch is halved and retried; in training a batch that does not fit is
    split into micro-batches (halved until it fits) whose gradients accumulate into the same update as
    the whole batch's (see `_backward`); the smaller micro-batch is kept for the rest of the run, noted,
    and one row at a time that still does not fit is an InputError (nothing is saved).
    """

    STATE_FILE = "transformer-history.json"

    def __init__(
        self,
        *,
        checkpoint: str = "minilm",
        max_length: int = 64,
        lr: float = 2e-5,
        weight_decay: float = 0.01,
        warmup_ratio: float = 0.1,
        max_grad_norm: float = 1.0,
        epochs: int = 5,
        patience: int = 2,
        batch_size: int = 32,
        eval_batch_size: int = 64,
        seed: int = 42,
        device: str = "auto",
    ):
        self._setup(
            "transformer",
            device,
            max_length=max_length,
            epochs=epochs,
            batch_size=batch_size,
            eval_batch_size=eval_batch_size,
        )
        if not 0 <= warmup_ratio < 1:
            raise InputError(f"transformer option warmup_ratio must be in [0, 1), got {warmup_ratio!r}")
        if lr <= 0 or weight_decay < 0 or max_grad_norm < 0:
            raise InputError("transformer options lr must be > 0, weight_decay and max_grad_norm >= 0")
        self.checkpoint, self.max_length, self.lr, self.weight_decay = str(checkpoint), max_length, lr, weight_decay
        self.warmup_ratio, self.max_grad_norm = warmup_ratio, max_grad_norm
        self.epochs, self.patience = epochs, patience
        self.batch_size, self.eval_batch_size, self.seed = batch_size, eval_batch_size, seed
        self.name = "transformer"
        self.hf_model: Any = None  # once fitted or loaded: a transformers model, of the class the checkpoint names

    # ------------------------------------------------------------------ training
    def fit(
        self, train: pd.DataFrame, classes: list[str], *, progress: Progress | None = None
    ) -> TransformerClassifier:
        """Fine-tune on rows with split 'train'; rows with split 'val' choose the epoch (early stopping).

        Without a split column every row trains. Other splits (test, calibration) are ignored. Each epoch is
        a stage of `progress` whose steps are the batches.
        """
        classes = list(classes)
        (texts, codes), val, self.notes = training_split(train, classes)
        self.classes, self.history, self.best_epoch = classes, [], None
        seed_everything(self.seed)
        self._load_checkpoint(len(classes))
        self._train(texts, codes, epochs=self.epochs, val=val, stage="fit", progress=progress)
        return self

    def adapt(self, rows: pd.DataFrame, epochs: int = 3, *, progress: Progress | None = None) -> TransformerClassifier:
        """A copy fine-tuned `epochs` more epochs on every row given (paper section 4.6: a target
        platform's calibration split), with the same optimiser settings and a fresh warm-up schedule,
        no early stopping. `self` is left unchanged."""
        self._require_fitted()
        if not isinstance(epochs, int) or epochs < 1:
            raise InputError(f"adapt needs a positive number of epochs, got {epochs!r}")
        texts, codes = texts_and_codes(rows, self.classes)
        if not texts:
            raise InputError("adapt was given no rows")
        twin = copy.deepcopy(self, memo={id(self.tokenizer): self.tokenizer})
        absent = [c for i, c in enumerate(self.classes) if not (codes == i).any()]
        twin.notes.append(
            f"adapted on {len(texts)} row(s) for {epochs} epoch(s); the last epoch is kept"
            + (f"; no adaptation rows of class(es) {', '.join(absent)}" if absent else "")
        )
        seed_everything(self.seed)
        twin._train(texts, codes, epochs=epochs, val=None, stage="adapt", progress=progress)
        return twin

    def _load_checkpoint(self, num_labels: int) -> None:
        source = resolve_checkpoint(self.checkpoint)
        try:
            with quiet_transformers():
                config = AutoConfig.from_pretrained(source)
                has_head = any(a.endswith("ForSequenceClassification") for a in (config.architectures or []))
                mismatch = has_head and config.num_labels != num_labels
                model, info = AutoModelForSequenceClassification.from_pretrained(
                    source,
                    id2label=dict(enumerate(self.classes)),
                    label2id={c: i for i, c in enumerate(self.classes)},
                    ignore_mismatched_sizes=mismatch,
                    output_loading_info=True,
                )
                tokenizer = AutoTokenizer.from_pretrained(source)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load checkpoint '{self.checkpoint}' ({first_line(exc)})") from None
        if mismatch:
            self.notes.append(
                f"checkpoint '{self.checkpoint}' has a {config.num_labels}-label classification head; "
                f"loaded with ignore_mismatched_sizes=True and a new {num_labels}-label head"
            )
        elif has_head and [str(v) for v in dict(sorted(config.id2label.items())).values()] != self.classes:
            self.notes.append(
                f"reused the checkpoint's {num_labels}-label head; its outputs were named "
                f"{', '.join(map(str, dict(sorted(config.id2label.items())).values()))}, "
                f"now {', '.join(self.classes)} in that order"
            )
        fresh = sorted(set(info.get("missing_keys", ())) | {k[0] for k in info.get("mismatched_keys", ())})
        if fresh:
            self.notes.append(f"newly initialised from seed {self.seed}: {', '.join(fresh)}")
        check_max_length(self.max_length, position_limit(config, tokenizer), self.checkpoint)
        ensure_pad_token(tokenizer, self.checkpoint, self.notes)
        model.config.pad_token_id = tokenizer.pad_token_id
        self.hf_model, self.tokenizer = model.float().to(self.device).eval(), tokenizer

    def _optimizer(self) -> torch.optim.Optimizer:
        trained = [p for p in self.hf_model.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in trained if p.ndim >= 2], "weight_decay": self.weight_decay},
            {"params": [p for p in trained if p.ndim < 2], "weight_decay": 0.0},
        ]  # biases and norms: no decay
        try:  # the fused kernel: same update rule, ~7x faster steps on CPU than the default foreach one
            return torch.optim.AdamW(groups, lr=self.lr, fused=True)
        except (RuntimeError, TypeError, ValueError):
            return torch.optim.AdamW(groups, lr=self.lr)

    def _train(
        self, texts: list[str], codes: np.ndarray, *, epochs: int, val, stage: str, progress: Progress | None
    ) -> None:
        ids = self._tokenize(texts)
        labels = torch.as_tensor(codes, dtype=torch.long)
        steps = math.ceil(len(ids) / self.batch_size)
        optimizer = self._optimizer()
        scheduler = transformers.get_linear_schedule_with_warmup(
            optimizer, math.ceil(self.warmup_ratio * steps * epochs), steps * epochs
        )
        pad_id, side = self.tokenizer.pad_token_id, self.tokenizer.padding_side
        micro = self.batch_size  # rows per forward/backward pass; halved on out-of-memory (see _backward)

        def batch_loss(index: torch.Tensor) -> torch.Tensor:
            nonlocal micro
            while (loss := self._backward(ids, labels, index, micro, pad_id, side)) is None:
                micro = self._smaller_micro_batch(micro, len(index), optimizer)
            return loss

        def entry(epoch: int, train_loss: float, train_seconds: float) -> dict:
            return {
                "stage": stage,
                "epoch": epoch,
                "train_loss": train_loss,
                "val_macro_f1": None,
                "lr": scheduler.get_last_lr()[0],
                "train_seconds": train_seconds,
            }

        kept = train_epochs(
            TrainingRun(
                rows=len(ids),
                batch_size=self.batch_size,
                epochs=epochs,
                seed=self.seed,
                patience=self.patience,
                max_grad_norm=self.max_grad_norm,
                optimizer=optimizer,
                scheduler=scheduler,
                modules={"model": self.hf_model},
                batch_loss=batch_loss,
                entry=entry,
                val_macro_f1=None if val is None else lambda: self._val_macro_f1(*val),
                unvalidated_note=(
                    "no validation rows: the last epoch's weights are kept"
                    if stage == "fit"
                    else "adaptation: the last epoch's weights are kept"
                ),
                label=f"{'train' if stage == 'fit' else stage} {self.name} seed {self.seed}",
                progress=progress,
            ),
            self.history,
            self.notes,
        )
        if val is not None:
            self.best_epoch = kept
        elif stage == "fit":
            self.best_epoch = None
            self.notes.append(NO_VALIDATION)

    def _backward(
        self, ids: list[list[int]], labels: torch.Tensor, index: torch.Tensor, micro: int, pad_id: int, side: str
    ) -> torch.Tensor | None:
        """Forward and backward passes of one training batch, `micro` rows at a time; returns the batch's
        mean loss, or None if the device ran out of memory (the caller clears the gradients and retries).

        Each micro-batch's loss is its summed cross-entropy divided by the whole batch's row count, so the
        accumulated gradients are those of the batch's mean loss: the optimiser step, gradient clipping and
        learning-rate schedule are the same as with the whole batch in one pass (up to float rounding; each
        micro-batch is padded to its own longest row, which the attention mask makes irrelevant). Dropout
        masks are drawn per pass, so with dropout the two are equal in distribution, not bit for bit.
        """
        model, device = self.hf_model, self.device
        total = torch.zeros((), device=device)
        try:
            for chunk in index.split(micro):
                input_ids, mask = pad_batch([ids[i] for i in chunk.tolist()], pad_id, side)
                target = labels[chunk].to(device, non_blocking=True)
                with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
                    logits = model(
                        input_ids=input_ids.to(device, non_blocking=True),
                        attention_mask=mask.to(device, non_blocking=True),
                    ).logits
                loss = F.cross_entropy(logits.float(), target, reduction="sum") / len(index)
                loss.backward()
                total += loss.detach()
        except (RuntimeError, MemoryError) as exc:
            if not is_out_of_memory(exc):
                raise
            return None  # leaving the frame frees the failed pass's tensors
        return total

    def _smaller_micro_batch(self, micro: int, rows: int, optimizer: torch.optim.Optimizer) -> int:
        """After out-of-memory on a batch of `rows` rows in micro-batches of `micro`: drop the partial
        gradients, halve the micro-batch and say so in `notes`; InputError once one row at a time fails."""
        optimizer.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        failed = min(micro, rows)
        if failed == 1:
            raise InputError(
                f"out of memory while training on {self.device} even one row at a time (max_length "
                f"{self.max_length}); lower max_length, use a smaller checkpoint or a device with "
                "more memory"
            )
        smaller = math.ceil(failed / 2)
        where = f"training batch size {failed}" if failed == rows else f"training micro-batches of {failed}"
        self.notes.append(
            f"out of memory at {where}; continuing with micro-batches of {smaller} "
            f"(gradients accumulated over each batch of {self.batch_size})"
        )
        return smaller

    def _val_macro_f1(self, texts: list[str], codes: np.ndarray) -> float:
        return self._macro_f1(codes, self.predict_logits(texts).argmax(axis=1))

    # ------------------------------------------------------------------ inference
    def encode(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """`input_ids` and `attention_mask` for `texts`, padded to the longest, on `device` (for attribution)."""
        self._require_fitted()
        input_ids, mask = pad_batch(
            self._tokenize([str(t) for t in texts]), self.tokenizer.pad_token_id, self.tokenizer.padding_side
        )
        return {"input_ids": input_ids.to(self.device), "attention_mask": mask.to(self.device)}

    def predict_logits(self, texts: list[str]) -> np.ndarray:
        """Raw logits (n, k), columns in class order. Batches are length-sorted (longest first) and
        restored to input order; on out-of-memory the batch is halved and retried (noted in `notes`)."""
        self._require_fitted()
        texts = [str(t) for t in texts]
        out = np.empty((len(texts), len(self.classes)), dtype=np.float64)
        if not texts:
            return out
        ids = self._tokenize(texts)
        order = longest_first(ids)
        model, pad_id, side = self.hf_model, self.tokenizer.pad_token_id, self.tokenizer.padding_side
        model.eval()

        def run(index):
            input_ids, mask = pad_batch([ids[i] for i in index], pad_id, side)
            with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
                logits = model(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device)).logits
            out[index] = logits.float().cpu().numpy()

        with torch.inference_mode():
            in_batches(order, self.eval_batch_size, run, device=self.device, notes=self.notes)
        return out

    # ------------------------------------------------------------------ persistence
    def save_artifacts(self, directory: Path) -> None:
        """`directory/hf`: model and tokenizer via save_pretrained; history and notes beside it."""
        self._require_fitted()
        save_pretrained(directory, self.hf_model, self.tokenizer)
        self._save_state(directory)

    def load_artifacts(self, directory: Path) -> None:
        directory = Path(directory)
        hf = directory / HF_DIR
        if not (hf / "config.json").is_file():
            raise InputError(f"no {HF_DIR}/config.json here; expected a folder written by save_model", path=directory)
        try:
            with quiet_transformers():
                model = AutoModelForSequenceClassification.from_pretrained(hf)
                tokenizer = AutoTokenizer.from_pretrained(hf)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load the saved transformer ({first_line(exc)})", path=hf) from None
        if self.classes and model.config.num_labels != len(self.classes):
            raise InputError(
                f"the saved model has {model.config.num_labels} outputs but the manifest names "
                f"{len(self.classes)} classes",
                path=hf,
            )
        self.hf_model, self.tokenizer = model.float().to(self.device).eval(), tokenizer
        self._load_state(directory)
