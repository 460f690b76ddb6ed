import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.models import create
from mhaudit.stats.calibration import fit_temperature


def frame(n=60):
    words = {"pos": "happy sunny calm", "neg": "sad grey tired"}
    labels = ["pos", "neg"] * (n // 2)
    other = {"pos": "neg", "neg": "pos"}
    # every fifth val row carries the other class's words, so a finite temperature fits
    texts = [f"{words[other[y] if i >= n - 20 and i % 5 == 0 else y]} day {i}" for i, y in enumerate(labels)]
    return pd.DataFrame({"text": texts, "label": labels, "split": ["train"] * (n - 20) + ["val"] * 20})


def test_fit_calibrates_on_val_and_logits_follow_class_order():
    data = frame()
    model = create("tfidf-lr", min_df=1).fit(data, ["neg", "pos"])
    raw = create("tfidf-lr", min_df=1, calibrate=False).fit(data[data["split"] == "train"], ["neg", "pos"])
    val = data[data["split"] == "val"]
    t = fit_temperature(raw.predict_logits(val["text"].tolist()), (val["label"] == "pos").astype(int).to_numpy())
    assert model.temperature == pytest.approx(t)
    logits = model.predict_logits(["sad grey tired", "happy sunny calm"])
    assert logits.shape == (2, 2) and logits[0].argmax() == 0 and logits[1].argmax() == 1
    np.testing.assert_allclose(logits, raw.predict_logits(["sad grey tired", "happy sunny calm"]) / t)


def test_no_val_rows_no_home_temperature_said_and_kept_in_the_manifest(tmp_path):
    import json

    from mhaudit.models import save_model

    with pytest.warns(UserWarning, match="no home temperature: the training platform has no val rows"):
        model = create("tfidf-lr", min_df=1).fit(frame().assign(split="train"), ["neg", "pos"])
    assert model.temperature == 1.0
    save_model(model, tmp_path, trained_on="home")
    manifest = json.loads((tmp_path / "mhaudit-model.json").read_text())
    assert manifest["trained_on"] == "home" and manifest["notes"][0].startswith("no home temperature")


def test_linear_attributions_point_at_the_class_words():
    model = create("tfidf-lr", min_df=1, calibrate=False).fit(frame(), ["neg", "pos"])
    attr = model.explain(["sad grey tired day", "happy sunny calm day"])
    top = attr[attr["class"] == "neg"].nlargest(3, "score")["word"]
    assert set(top) == {"sad", "grey", "tired"} and set(attr["method"]) == {"linear"}


def test_a_class_without_training_examples_is_an_input_error():
    with pytest.raises(InputError, match="no example of class\\(es\\) neutral"):
        create("tfidf-lr", min_df=1).fit(frame(), ["neg", "neutral", "pos"])
