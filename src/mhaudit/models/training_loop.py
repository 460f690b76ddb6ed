"""The training loop of the torch models (transformer, BERT+LSTM hybrids), with early stopping.

Each epoch draws a new order of the training rows from a `torch.Generator` seeded with the run's seed
(so the batches depend on the seed alone, not on the global generator dropout draws from) and, per
batch of `batch_size` rows, lets the model run its forward and backward passes (`batch_loss`), clips
the gradient norm, steps the optimiser and the learning-rate schedule. With validation rows each epoch
is scored by macro-F1; the best epoch's weights are kept (a CPU copy, loaded back at the end) and
training stops after `patience` epochs without a better score (0: never). Without validation rows
every epoch runs and the last is kept. Each epoch is a stage of the run's `progress`, one step per batch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from mhaudit.core.progress import Progress, ensure

NO_VALIDATION = "no validation rows (split 'val'): no early stopping, the last epoch is kept"


def epoch_entry(epoch: int, train_loss: float, train_seconds: float) -> dict:
    """The history entry an epoch starts with; the loop adds its validation score, seconds and kept."""
    return {"epoch": epoch, "train_loss": train_loss, "val_macro_f1": None}


@dataclass
class TrainingRun:
    """One run of `train_epochs`: its settings and the parts the model supplies."""

    rows: int  # training rows, batched in a new shuffled order each epoch
    batch_size: int
    epochs: int
    seed: int  # seeds the generator that shuffles the rows
    patience: int  # epochs without a better validation score before stopping; 0: never
    max_grad_norm: float  # 0: no clipping
    optimizer: torch.optim.Optimizer
    modules: dict[str, nn.Module]  # what trains: train mode each epoch; its weights kept for the best epoch
    # forward and backward passes of the rows at these positions; their mean loss, a float or a detached
    # tensor (summed on its device: no synchronisation per step)
    batch_loss: Callable[[torch.Tensor], torch.Tensor | float]
    val_macro_f1: Callable[[], float] | None = None  # None: no validation rows
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None  # stepped after each optimiser step
    entry: Callable[[int, float, float], dict] = epoch_entry  # (epoch, train_loss, train_seconds) -> entry
    unvalidated_note: str | None = None  # the last entry's `note` when there are no validation rows
    label: str = "train"  # what the run is, e.g. "train transformer seed 42": names its stages
    progress: Progress | None = None  # each epoch a stage of one step per batch


@dataclass
class _Best:
    """The best validation score so far, its epoch, its weights (None: the model holds them), the epochs since."""

    f1: float = -math.inf
    epoch: int | None = None
    state: dict | None = None
    stale: int = 0


def train_epochs(run: TrainingRun, history: list[dict], notes: list[str]) -> int | None:
    """Train as the module says: one entry per epoch appended to `history` (`kept` marks the epoch whose
    weights the modules hold at the end), what a reader should know appended to `notes`. Returns the
    kept epoch, None without validation rows; the modules are left in eval mode."""
    first, best = len(history), _Best()
    shuffle = torch.Generator().manual_seed(run.seed)
    progress = ensure(run.progress)
    for epoch in range(1, run.epochs + 1):
        with progress.stage(f"{run.label} epoch {epoch}/{run.epochs}", total=math.ceil(run.rows / run.batch_size)):
            entry = _train_epoch(run, epoch, shuffle, progress)
        history.append(entry)
        if run.val_macro_f1 is not None and _should_stop(run, best, epoch, entry["val_macro_f1"]):
            notes.append(
                f"early stopping after epoch {epoch}: no better validation macro-F1 "
                f"for {best.stale} epoch(s) (patience {run.patience})"
            )
            progress.note(f"{run.label}: {notes[-1]}")
            break
    if run.val_macro_f1 is not None:
        notes.append(f"kept epoch {best.epoch} (validation macro-F1 {best.f1:.4f})")
        if best.state is not None:
            for name, module in run.modules.items():
                module.load_state_dict(best.state[name])
    elif run.unvalidated_note is not None:
        history[-1]["note"] = run.unvalidated_note
    for entry in history[first:]:
        entry["kept"] = entry is history[-1] if run.val_macro_f1 is None else entry["epoch"] == best.epoch
    for module in run.modules.values():
        module.eval()
    return best.epoch


def _train_epoch(run: TrainingRun, epoch: int, shuffle: torch.Generator, progress: Progress) -> dict:
    """One pass over the training rows in a new order, then the validation score; the epoch's entry."""
    start = time.perf_counter()
    for module in run.modules.values():
        module.train()
    n, size = run.rows, run.batch_size
    order = torch.randperm(n, generator=shuffle)
    params = [p for group in run.optimizer.param_groups for p in group["params"]]
    loss_sum: torch.Tensor | float = 0.0
    for step in range(math.ceil(n / size)):
        index = order[step * size : (step + 1) * size]
        loss = run.batch_loss(index)
        if run.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(params, run.max_grad_norm)
        run.optimizer.step()
        if run.scheduler is not None:
            run.scheduler.step()
        run.optimizer.zero_grad(set_to_none=True)
        loss_sum += loss * len(index)
        shown = run.progress is not None and step % 10 == 9  # the running loss: float() waits for the device
        progress.advance(status=f"loss {float(loss_sum) / min(n, (step + 1) * size):.4f}" if shown else None)
    entry = run.entry(epoch, float(loss_sum) / n, time.perf_counter() - start)
    if run.val_macro_f1 is not None:
        entry["val_macro_f1"] = float(run.val_macro_f1())
    entry["seconds"] = time.perf_counter() - start
    progress.note(
        f"{run.label} epoch {epoch}/{run.epochs}: train loss {entry['train_loss']:.4f}"
        + (f", validation macro-F1 {entry['val_macro_f1']:.3f}" if run.val_macro_f1 is not None else "")
    )
    return entry


def _should_stop(run: TrainingRun, best: _Best, epoch: int, f1: float) -> bool:
    """Record an epoch's validation score in `best`; True when `patience` epochs in a row did not beat it.
    An undefined macro-F1 (NaN: a class neither in the validation rows nor predicted) beats no number."""
    if best.epoch is None or f1 > best.f1 or (math.isnan(best.f1) and not math.isnan(f1)):
        best.f1, best.stale, best.epoch = f1, 0, epoch
        # a CPU copy of the weights, except after the last epoch, whose weights the modules hold already
        best.state = (
            {
                name: {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
                for name, module in run.modules.items()
            }
            if epoch < run.epochs
            else None
        )
        return False
    best.stale += 1
    return run.patience > 0 and best.stale >= run.patience and epoch < run.epochs
