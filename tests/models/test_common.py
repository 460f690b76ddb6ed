"""One check over every registered model (like scikit-learn's check_estimator): fit on a small corpus,
reproducible for a seed, save -> load -> identical logits, columns in the mapping's class order."""

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.models import create, load_model, save_model
from mhaudit.models.base import BUILTIN

WORDS = {"calm": "sunny relaxed garden walk", "worry": "panic racing dread nervous", "low": "empty numb tired alone"}
CLASSES = ["worry", "calm", "low"]  # deliberately not alphabetical


def corpus(n=90):
    rng = np.random.default_rng(0)
    labels = rng.choice(list(WORDS), size=n)
    texts = [f"{WORDS[y]} today {rng.integers(1000)}" for y in labels]
    return pd.DataFrame({"text": texts, "label": labels, "split": ["train"] * (n - 24) + ["val"] * 24})


def options(name, tmp_path_factory):
    if name == "transformer":
        pytest.importorskip("torch")
        tiny = pytest.importorskip("tests.models.tiny_bert")
        return {"checkpoint": str(tiny.tiny_checkpoint(tmp_path_factory.mktemp("tiny"), len(CLASSES))),
                "epochs": 8, "patience": 8, "lr": 2e-3, "batch_size": 8, "progress": False}
    if name.startswith("bert-lstm"):
        pytest.importorskip("torch")
        tiny = pytest.importorskip("tests.models.tiny_bert")
        return {"checkpoint": str(tiny.tiny_checkpoint(tmp_path_factory.mktemp("tiny"), None)),
                "epochs": 8, "patience": 8, "progress": False}
    return {"min_df": 1}


# The LLM baseline needs a running server and is binary: tests/models/test_llm_model.py checks it.
@pytest.mark.parametrize("name", sorted(set(BUILTIN) - {"llm-zero-shot"}))
def test_every_registered_model(name, tmp_path, tmp_path_factory):
    opts = options(name, tmp_path_factory)
    train, texts = corpus(), ["panic racing", "sunny garden", "numb alone", "today"]
    model = create(name, seed=3, **opts).fit(train, CLASSES)
    logits = model.predict_logits(texts)
    assert logits.shape == (4, 3) and np.isfinite(logits).all()
    assert logits[:3].argmax(axis=1).tolist() == [0, 1, 2]  # column k is CLASSES[k]
    again = create(name, seed=3, **opts).fit(train, CLASSES).predict_logits(texts)
    np.testing.assert_array_equal(logits, again)
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.classes == CLASSES and loaded.name == name
    np.testing.assert_array_equal(loaded.predict_logits(texts), logits)


def test_unknown_model_and_folder():
    with pytest.raises(InputError, match="unknown model 'gpt-9'"):
        create("gpt-9")
    with pytest.raises(InputError, match="no mhaudit-model.json"):
        load_model("/nonexistent/model")
