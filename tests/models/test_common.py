"""One check over every registered model (like scikit-learn's check_estimator): fit on a small corpus,
reproducible for a seed, save -> load -> identical logits, columns in the mapping's class order, and the
registry's `deterministic` flag true to what another seed does."""

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.models import create, is_deterministic, load_model, save_model, training_seeds
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
        return {
            "checkpoint": str(tiny.tiny_checkpoint(tmp_path_factory.mktemp("tiny"), len(CLASSES))),
            "epochs": 8,
            "patience": 8,
            "lr": 2e-3,
            "batch_size": 8,
        }
    if name.startswith("bert-lstm"):
        pytest.importorskip("torch")
        tiny = pytest.importorskip("tests.models.tiny_bert")
        return {
            "checkpoint": str(tiny.tiny_checkpoint(tmp_path_factory.mktemp("tiny"), None)),
            "epochs": 8,
            "patience": 8,
        }
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
    other_seed = create(name, seed=11, **opts).fit(train, CLASSES).predict_logits(texts)
    if is_deterministic(name):  # trained once for every seed: another seed must give the very same logits
        np.testing.assert_array_equal(other_seed, logits)
    else:
        assert not np.array_equal(other_seed, logits)
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.classes == CLASSES and loaded.name == name
    np.testing.assert_array_equal(loaded.predict_logits(texts), logits)


def test_deterministic_models_are_trained_for_the_first_seed_only():
    assert [
        n for n in sorted(set(BUILTIN) - {"transformer", "bert-lstm", "bert-lstm-attention"}) if is_deterministic(n)
    ] == ["char-tfidf-lr", "tfidf-lr"]
    assert training_seeds("tfidf-lr", [42, 0, 1]) == (
        [42],
        "tfidf-lr is deterministic: trained once (seed 42), not per seed",
    )
    assert training_seeds("char-tfidf-lr", (7, 1), label="char") == (
        [7],
        "char is deterministic: trained once (seed 7), not per seed",
    )
    assert training_seeds("tfidf-lr", [5]) == ([5], None)  # one seed asked: nothing to say
    assert training_seeds("llm-zero-shot", [42, 0]) == ([42, 0], None)  # its few-shot examples follow the seed
    with pytest.raises(InputError, match="unknown model 'gpt-9'"):
        is_deterministic("gpt-9")


def test_unknown_model_and_folder():
    with pytest.raises(InputError, match="unknown model 'gpt-9'"):
        create("gpt-9")
    with pytest.raises(InputError, match="no mhaudit-model.json"):
        load_model("/nonexistent/model")


def test_an_unknown_option_is_one_sentence():
    with pytest.raises(InputError, match=r"model 'tfidf-lr' has no option progress; its options: .*min_df"):
        create("tfidf-lr", progress=False)
