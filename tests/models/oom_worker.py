"""Run by tests/models/test_transformer_oom.py in a child process: real out-of-memory during training.

    python -m tests.models.oom_worker CHECKPOINT OUT_DIR

The child is started with glibc's malloc told to serve every allocation above 64 KiB by mmap and to hand
it back on free (MALLOC_MMAP_THRESHOLD_, MALLOC_ARENA_MAX), so the process's address space follows the
memory it holds. It fine-tunes the same tiny BERT (dropout off, seed 0) several times on the same 64 rows
and writes what happened to OUT_DIR/result.json and the weights to OUT_DIR/*.pt:

1. `probe-16`: an unlimited fit with batch size 16, measuring the address space it needs above what
   the process holds when training starts (the first forward pass), read from /proc/self/status.
2. `reference`: an unlimited fit with batch size 32 (the weights to match), measured the same way
   (VmPeak is the process's peak; the peaks rise, 16 first, so each reading is that run's own).
3. `accumulated`: the same fit with the address space capped (setrlimit RLIMIT_AS) at the start of
   training to halfway between what batch 16 and batch 32 need: torch's own CPU allocator then fails
   on the batch of 32 ("DefaultCPUAllocator: can't allocate memory"), and the model must go on in
   micro-batches of 16.
4. `one-row`: a cap 2 MiB above the start of training, which no pass fits (the embedding gradient alone
   is 7.8 MB): the fit must end in an InputError.

The cap is set by a global forward pre-hook at the first forward pass of the fit, because the checkpoint
must load and the rows be tokenized first; the hook only sets the limit and removes itself, so the
out-of-memory errors come from real allocations, not from a stand-in. Linux only.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
from pathlib import Path

import numpy as np
import pandas as pd

FILLER = "today really just maybe the my this week after work again felt".split()
CLASSES = ["sad", "calm", "worry"]
MAX_LENGTH = 128
OPTIONS = dict(lr=1e-3, epochs=1, max_length=MAX_LENGTH, seed=0, device="cpu")


def rows(n: int = 64) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(FILLER, MAX_LENGTH)) for _ in range(n)]
    return pd.DataFrame({"text": texts, "label": [CLASSES[i % 3] for i in range(n)], "split": "train"})


def vm(field: str) -> int:
    """VmSize or VmPeak of this process, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


class AtTrainingStart:
    """A global forward pre-hook that, at the first forward pass, records VmSize and sets RLIMIT_AS to it
    plus `margin` bytes (None: no limit); then removes itself."""

    def __init__(self, margin: int | None):
        import torch

        self.margin, self.start = margin, None
        self.handle = torch.nn.modules.module.register_module_forward_pre_hook(self)

    def __call__(self, module, args):
        if self.start is None:
            self.start = vm("VmSize")
            if self.margin is not None:
                _, hard = resource.getrlimit(resource.RLIMIT_AS)
                resource.setrlimit(resource.RLIMIT_AS, (self.start + self.margin, hard))
            self.handle.remove()

    def release(self) -> None:
        self.handle.remove()
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def fit(checkpoint: str, batch_size: int, margin: int | None):
    from mhaudit.core.errors import InputError
    from mhaudit.models import create

    gc.collect()
    model = create("transformer", checkpoint=checkpoint, batch_size=batch_size, **OPTIONS)
    hook = AtTrainingStart(margin)
    error = None
    try:
        model.fit(rows(), CLASSES)
    except InputError as exc:
        error = str(exc)
    finally:
        hook.release()
    return model, hook.start, error


def main(checkpoint: str, out: str) -> None:
    import time

    import torch

    torch.set_num_threads(1)
    out_dir = Path(out)
    result, clock = {"seconds": {}}, time.perf_counter()

    def lap(name):
        nonlocal clock
        result["seconds"][name] = round(time.perf_counter() - clock, 2)
        clock = time.perf_counter()

    probe, start, _ = fit(checkpoint, 16, None)
    result["need_16"] = vm("VmPeak") - start
    del probe
    lap("probe-16")
    reference, start, _ = fit(checkpoint, 32, None)  # peaks rise: this reading is batch 32's own
    result["need_32"] = vm("VmPeak") - start
    result["reference_notes"] = reference.notes
    torch.save(reference.hf_model.state_dict(), out_dir / "reference.pt")
    del reference
    lap("reference")
    result["margin"] = (result["need_16"] + result["need_32"]) // 2
    accumulated, _, error = fit(checkpoint, 32, result["margin"])
    result["accumulated_error"] = error
    result["accumulated_notes"] = accumulated.notes
    torch.save(accumulated.hf_model.state_dict(), out_dir / "accumulated.pt")
    del accumulated
    lap("accumulated")
    one_row, _, error = fit(checkpoint, 32, 2 * 2**20)
    result["one_row_error"] = error
    result["one_row_notes"] = one_row.notes
    lap("one-row")
    (out_dir / "result.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main(*sys.argv[1:3])
