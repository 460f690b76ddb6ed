"""Importing a user's own predictions: formats, class order, probabilities, and every bad input."""

import re

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.tables.prediction_files import PredictionColumns, read_predictions
from mhaudit.tables.predictions import PROB_SUM_TOLERANCE, PredictionSet


def write(tmp_path, frame, name="preds.csv"):
    path = tmp_path / name
    frame.to_parquet(path) if name.endswith(".parquet") else frame.to_csv(path, index=False)
    return path


def probs_frame(n=6):
    rng = np.random.default_rng(0)
    p = rng.dirichlet([1, 1, 1], size=n)
    return pd.DataFrame(
        {
            "label": ["b", "a", "c", "1", "0", "2"][:n],
            "platform": ["x"] * 3 + ["y"] * 3,
            "prob_a": p[:, 0],
            "prob_b": p[:, 1],
            "prob_c": p[:, 2],
        }
    ), p


@pytest.mark.parametrize("name", ["preds.csv", "preds.parquet"])
def test_probabilities_become_log_probabilities_and_indices_become_names(tmp_path, name):
    frame, p = probs_frame()
    result = read_predictions([write(tmp_path, frame, name)], classes=["a", "b", "c"], model="mine", seed=3)
    assert result.classes == ["a", "b", "c"] and result.score_kind.startswith("log-probabilities")
    out = result.frame
    assert out["label"].tolist() == ["b", "a", "c", "b", "a", "c"]
    np.testing.assert_allclose(np.exp(out[["logit_a", "logit_b", "logit_c"]].to_numpy()), p, rtol=1e-12)
    assert set(out["model"]) == {"mine"} and set(out["seed"]) == {3} and set(out["split"]) == {"test"}
    assert out["dataset"].tolist() == out["platform"].tolist()


def test_class_order_flag_and_one_file_per_platform(tmp_path):
    logits = pd.DataFrame({"label": ["neg", "pos"], "logit_pos": [0.2, 1.5], "logit_neg": [0.1, -1.0]})
    a, b = write(tmp_path, logits, "reddit.csv"), write(tmp_path, logits, "twitter.csv")
    result = read_predictions([a, b], classes=["neg", "pos"], columns=PredictionColumns(platform=None))
    assert result.classes == ["neg", "pos"] and result.score_kind == "logits"
    assert result.frame["platform"].tolist() == ["reddit", "reddit", "twitter", "twitter"]
    assert list(result.frame.columns[-2:]) == ["logit_neg", "logit_pos"]
    assert result.frame["logit_pos"].tolist() == [0.2, 1.5, 0.2, 1.5]
    assert len(result.fingerprints) == 2 and all(len(v) == 64 for v in result.fingerprints.values())


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: f.assign(prob_a=[np.nan] + f["prob_a"].tolist()[1:]), "row 1: score column 'prob_a' is empty"),
        (lambda f: f.assign(prob_b=[np.inf] + f["prob_b"].tolist()[1:]), "score column 'prob_b' is 'inf'"),
        (lambda f: f.assign(prob_a=f["prob_a"] + 0.01), f"tolerance {PROB_SUM_TOLERANCE}"),
        (
            lambda f: f.assign(label=["b", "a", "z", "1", "0", "2"]),
            "row 3: label 'z' is not one of the classes a, b, c",
        ),
        (
            lambda f: f.assign(label=["b", "a", "7", "1", "0", "2"]),
            "row 3: label index 7 is beyond the 3 score columns",
        ),
        (lambda f: f.assign(platform=["x", None, "x", "y", "y", "y"]), "row 2: column 'platform' is empty"),
        (lambda f: f.assign(seed=[0, 1.5, 0, 0, 0, 0]), "row 2: seed is not an integer"),
        (lambda f: f.drop(columns=["prob_a", "prob_b", "prob_c"]), "has no score columns"),
        (lambda f: f.drop(columns=["label"]), "missing column(s) label"),
        (lambda f: f.iloc[:0], "has no rows"),
    ],
)
def test_bad_input_names_file_row_and_column(tmp_path, change, message):
    frame, _ = probs_frame()
    with pytest.raises(InputError) as exc:
        read_predictions([write(tmp_path, change(frame))], classes=["a", "b", "c"], model="m")
    assert "preds.csv" in str(exc.value) and message in str(exc.value)


def test_integer_labels_index_the_score_columns_in_their_order(tmp_path):
    frame, _ = probs_frame()  # rows 4-6 hold indices of the score columns prob_a, prob_b, prob_c
    result = read_predictions([write(tmp_path, frame)], model="m")
    assert result.frame["label"].tolist() == ["b", "a", "c", "b", "a", "c"]
    assert "integer labels were read as indices of the score columns: 0 = a, 1 = b, 2 = c" in result.notes


def test_score_columns_for_unknown_or_missing_classes(tmp_path):
    frame, _ = probs_frame()
    path = write(tmp_path, frame)
    with pytest.raises(InputError, match="preds.csv: score columns for a, b, c differ from the classes a, b;"):
        read_predictions([path], classes=["a", "b"])
    with pytest.raises(InputError, match="score columns for a, b, c differ from the classes a, b, c, d"):
        read_predictions([path], classes=["a", "b", "c", "d"])


def test_duplicate_ids_for_one_model_and_platform(tmp_path):
    frame = pd.DataFrame({"id": ["1", "1"], "label": ["a", "b"], "platform": "x", "logit_a": [0, 1], "logit_b": [1, 0]})
    with pytest.raises(InputError, match="row 2: id '1' appears twice"):
        read_predictions([write(tmp_path, frame)])


def _set_frame():
    return pd.DataFrame(
        {
            "id": ["1", "2", "3", "4"],
            "model": ["m", "m", "m", "n"],
            "seed": [0, 0, 1, 0],
            "platform": ["x", "y", "x", "x"],
            "dataset": ["x", "y", "x", "x"],
            "split": "test",
            "label": ["a", None, "b", "a"],
            "logit_a": [0.1, 0.2, 0.3, 0.4],
            "logit_b": [1.0, 0.0, 2.0, 1.0],
        }
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: f.drop(columns="platform"), "no 'platform' column"),
        (lambda f: f.drop(columns="logit_b"), "no 'logit_b' column"),
        (lambda f: f.assign(logit_c=0.0), "a column 'logit_c' of no class"),
        (lambda f: f[[*f.columns[:7], "logit_b", "logit_a"]], "in the order logit_b, logit_a"),
        (lambda f: f.assign(logit_a=[0.1, np.inf, 0.0, 0.0]), "row 2: column 'logit_a' is inf"),
        (lambda f: f.assign(logit_b=["1", "x", "0", "0"]), "column 'logit_b' is not numeric"),
        (lambda f: f.assign(label=["a", "b", "c", None]), "row 3: column 'label' holds 'c'"),
    ],
)
def test_a_prediction_set_checks_itself_when_built(change, message):
    with pytest.raises(InputError, match=re.escape(message)):
        PredictionSet(change(_set_frame()), ["a", "b"])


def test_codes_groups_and_subsets_carry_the_checked_labels():
    preds = PredictionSet(_set_frame(), ["a", "b"])
    assert preds.codes.tolist() == [0, -1, 1, 0] and preds.codes.dtype == np.int64
    groups = preds.groups()
    assert list(groups) == [("m", 0, "x", "x"), ("m", 0, "y", "y"), ("m", 1, "x", "x"), ("n", 0, "x", "x")]
    assert groups[("m", 1, "x", "x")].y.tolist() == [1] and groups[("m", 1, "x", "x")].run == ("m", 1)
    assert groups[("m", 1, "x", "x")].logits.tolist() == [[0.3, 2.0]]
    assert preds.groups(("calibration",)) == {}
    assert preds.subset(np.array([3, 0])).frame["id"].tolist() == ["4", "1"]


def test_a_groups_rows_in_id_order_unless_its_files_had_no_ids():
    """In id order, two runs on the same ids line up row by row whatever the files' row order; a group without ids
    keeps its file order (it pairs by position)."""
    frame = pd.DataFrame(
        {
            "id": ["b", "c", "a", "row-1", "row-0"],
            "model": ["m", "m", "m", "p", "p"],
            "seed": 0,
            "platform": "x",
            "dataset": "x",
            "split": "test",
            "label": ["a", "b", "a", "b", "a"],
            "logit_a": [0.0, 1.0, 2.0, 3.0, 4.0],
            "logit_b": 0.5,
        }
    )
    preds = PredictionSet(frame, ["a", "b"], positional=frozenset({("p", 0, "x", "x")}))
    assert preds.groups()[("m", 0, "x", "x")].ids.tolist() == ["b", "c", "a"]  # by default, the files' order
    groups = preds.groups(id_order=True)
    ordered, positional = groups[("m", 0, "x", "x")], groups[("p", 0, "x", "x")]
    assert ordered.ids.tolist() == ["a", "b", "c"] and ordered.y.tolist() == [0, 0, 1]
    assert ordered.logits[:, 0].tolist() == [2.0, 0.0, 1.0] and ordered.pred.tolist() == [0, 1, 0]
    assert positional.ids.tolist() == ["row-1", "row-0"] and positional.positional
    np.testing.assert_allclose(ordered.probs[0], [1 / (1 + np.exp(-1.5)), 1 / (1 + np.exp(1.5))])
