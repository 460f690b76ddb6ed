"""Where and how the torch models run: the device, seeding, out-of-memory detection, batched inference, and
the state the models share (`TorchClassifier`).

Section 4.5 of the CPFE paper: one seed controls Python, NumPy, PyTorch (CPU and CUDA) and transformers,
so a seed gives identical logits on CPU. Inference batches are halved on out-of-memory and retried.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from mhaudit.core.errors import InputError
from mhaudit.stats.f1 import macro_f1, tallies


def seed_everything(seed: int) -> None:
    """Seed every generator the paper names: transformers' set_seed seeds Python, NumPy, PyTorch CPU and CUDA."""
    transformers.set_seed(seed)


def resolve_device(spec: str) -> torch.device:
    """'auto' → CUDA where available, else CPU; otherwise the torch device named (InputError if unusable)."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(spec)
    except (RuntimeError, TypeError):
        raise InputError(f"device '{spec}' is not a torch device; use 'auto', 'cpu' or 'cuda[:N]'") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device '{spec}' asked for, but CUDA is not available here; use 'auto' or 'cpu'")
    return device


def is_out_of_memory(exc: BaseException) -> bool:
    """CUDA or CPU allocator failure (torch raises OutOfMemoryError or a RuntimeError saying so)."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    message = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(
        s in message for s in ("out of memory", "can't allocate memory", "not enough memory")
    )


def in_batches(order: np.ndarray, size: int, run, *, device: torch.device, notes: list[str]) -> None:
    """Call `run(index)` for consecutive slices of `order`, `size` rows at a time; on out-of-memory clear
    the CUDA cache, halve the batch, note it in `notes` and retry (re-raised once one row fails)."""
    start = 0
    while start < len(order):
        index = order[start : start + size]
        try:
            run(index)
        except (RuntimeError, MemoryError) as exc:
            if not is_out_of_memory(exc) or size == 1:
                raise
        else:
            start += len(index)
            continue
        # out of memory; here, outside the handler, the failed batch's tensors are freed
        if device.type == "cuda":
            torch.cuda.empty_cache()
        notes.append(f"out of memory at inference batch size {size}; retrying with {size // 2}")
        size //= 2


class TorchClassifier:
    """What the transformer and the hybrids share: their run state, tokenizing, macro-F1, the history file."""

    STATE_FILE: str  # beside the saved weights: history, notes, best_epoch
    max_length: int
    name: str

    def _setup(self, kind: str, device: str, **counts: object) -> None:
        """InputError unless each of `counts` (options of model `kind`) is a positive integer; the device and
        the state before fitting or loading."""
        for key, value in counts.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputError(f"{kind} option {key} must be a positive integer, got {value!r}")
        self.device = resolve_device(device)
        self.autocast = self.device.type == "cuda" and torch.cuda.is_bf16_supported()
        self.options: dict = {}
        self.classes: list[str] = []
        self.tokenizer: Any = None  # once fitted or loaded (transformers' Auto* classes choose it at run time)
        self.history: list[dict] = []
        self.notes: list[str] = []
        self.best_epoch: int | None = None

    def _require_fitted(self) -> None:
        if self.tokenizer is None:  # fit and load_artifacts set it with the weights
            raise RuntimeError(f"the {self.name} model is not fitted; call fit() or load it with load_model()")

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(
            [str(t) for t in texts], truncation=True, max_length=self.max_length, add_special_tokens=True
        )["input_ids"]

    def _macro_f1(self, codes: np.ndarray, predicted: np.ndarray) -> float:
        return float(macro_f1(tallies(codes, predicted, len(self.classes))))  # NaN: a class absent and unpredicted

    def _save_state(self, directory: Path, **extra: object) -> None:
        state = {"history": self.history, "notes": self.notes, "best_epoch": self.best_epoch, **extra}
        (Path(directory) / self.STATE_FILE).write_text(json.dumps(state, indent=2))

    def _load_state(self, directory: Path) -> dict:
        """The saved state ({} without the file); its history, notes and best_epoch set on the model."""
        path = Path(directory) / self.STATE_FILE
        state = json.loads(path.read_text()) if path.is_file() else {}
        if state:
            self.history, self.notes, self.best_epoch = state["history"], state["notes"], state["best_epoch"]
        return state
