"""Scoring a post store's posts (weak_supervision.collect.scoring) with any object that has `predict_logits`: every
post once, in batches that are jobs of core.executors.run_jobs, the model loaded once per process, no torch for a
model without it; and the typed reader of the scores table."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from mhaudit.weak_supervision.collect.scores import scored_posts
from mhaudit.weak_supervision.collect.scoring import loaded_model, score_posts
from mhaudit.weak_supervision.collect.store import PostStore

LOADS = []


class LengthModel:
    """Logits from the text's length: a model without torch or scikit-learn."""

    classes = ("short", "long")

    def predict_logits(self, texts):
        n = np.array([len(t) for t in texts], dtype=float)
        return np.column_stack([10 - n, n - 10])


def load_length_model(folder: str) -> LengthModel:
    LOADS.append(folder)
    return LengthModel()


def _store(path, n=25):
    posts = [
        {
            "uri": f"at://a-{i % 3}/post/{i:03d}",
            "did": f"did:plc:{i % 3}",
            "text": "x" * (i + 1),
            "created_at": f"2026-01-{1 + i % 5:02d}T00:00:00Z",
            "langs": ["en"] if i % 2 else [],
            "categories": ["si"],
        }
        for i in range(n)
    ]
    with PostStore(path) as store:
        store.commit_batch(posts, cursor=n)
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_every_post_scored_once_in_batches(tmp_path, workers):
    store = _store(tmp_path / "posts.sqlite")
    LOADS.clear()
    assert score_posts(store, load_length_model, tmp_path, "d1", batch_size=4, workers=workers) == 25
    assert score_posts(store, load_length_model, tmp_path, "d1", batch_size=4, workers=workers) == 0
    if workers == 1:  # in this process: loaded once for the 7 batches (and kept for the second run)
        assert len(LOADS) <= 1
    with PostStore(store) as s:
        frame = scored_posts(s, "d1", ["short", "long"])
        assert scored_posts(s, "another model", ["short", "long"]).empty
    assert list(frame.columns) == ["uri", "created_at", "length", "langs", "categories", "logit_short", "logit_long"]
    assert len(frame) == 25 and frame["created_at"].is_monotonic_increasing
    assert (frame["logit_long"] == frame["length"] - 10).all()
    assert frame["langs"].map(len).isin([0, 1]).all() and frame["categories"].map(lambda c: c == ["si"]).all()
    assert not frame["uri"].str.contains("did:").any()  # the store's pseudonymous uris


def test_the_model_is_loaded_once_per_process(tmp_path):
    LOADS.clear()
    first = loaded_model(load_length_model, tmp_path / "m")
    assert loaded_model(load_length_model, str(tmp_path / "m")) is first and len(LOADS) == 1


def test_scoring_a_tfidf_model_imports_no_torch(tmp_path):
    """A job for a scikit-learn model never imports torch (it would cost seconds and memory per worker)."""
    _store(tmp_path / "posts.sqlite", n=40)
    code = f"""
import sys
import numpy as np, pandas as pd
from mhaudit.models import create, load_model, save_model
from mhaudit.weak_supervision.collect.scoring import model_digest, score_posts
texts = [f"word{{i % 7}} other{{i % 3}}" for i in range(60)]
frame = pd.DataFrame({{"text": texts, "label": ["short" if i % 2 else "long" for i in range(60)]}})
save_model(create("tfidf-lr").fit(frame, ["short", "long"]), {str(tmp_path / "model")!r})
assert "torch" not in sys.modules, "training imported torch"
folder = {str(tmp_path / "model")!r}
n = score_posts({str(tmp_path / "posts.sqlite")!r}, load_model, folder, model_digest(folder), batch_size=16)
assert n == 40 and "torch" not in sys.modules, sorted(m for m in sys.modules if m.startswith("torch"))[:3]
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
