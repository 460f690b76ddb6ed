"""Where and how the torch models run: the device, seeding, out-of-memory detection, batched inference.

Section 4.5 of the CPFE paper: one seed controls Python, NumPy, PyTorch (CPU and CUDA) and transformers,
so a seed gives identical logits on CPU. Inference batches are halved on out-of-memory and retried.
"""

from __future__ import annotations

import numpy as np
import torch
import transformers

from mhaudit.core.errors import InputError


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
        s in message for s in ("out of memory", "can't allocate memory", "not enough memory"))


def in_batches(order: np.ndarray, size: int, run, *, device: torch.device, notes: list[str]) -> None:
    """Call `run(index)` for consecutive slices of `order`, `size` rows at a time; on out-of-memory clear
    the CUDA cache, halve the batch, note it in `notes` and retry (re-raised once one row fails)."""
    start = 0
    while start < len(order):
        index = order[start:start + size]
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
