import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.splits import assign_calibration, assign_splits


def corpus(n_per_label=(500, 300, 200), platform="p"):
    labels = np.repeat(["a", "b", "c"], n_per_label)
    return pd.DataFrame(
        {
            "id": [f"{platform}{i}" for i in range(len(labels))],
            "label": labels,
            "platform": platform,
            "dataset": platform,
            "split": None,
        }
    )


def test_stratified_70_15_15_per_label_and_deterministic():
    out = assign_splits(corpus(), seed=3)
    counts = out.groupby(["label", "split"]).size().unstack()
    assert counts.loc["a"].to_dict() == {"test": 75, "train": 350, "val": 75}
    assert counts.loc["b"].to_dict() == {"test": 45, "train": 210, "val": 45}
    assert counts.loc["c"].to_dict() == {"test": 30, "train": 140, "val": 30}
    again = assign_splits(corpus(), seed=3)
    assert out["split"].tolist() == again["split"].tolist()
    assert out["split"].tolist() != assign_splits(corpus(), seed=4)["split"].tolist()


def test_calibration_split_is_stratified_and_only_from_the_platform():
    both = pd.concat(
        [assign_splits(corpus(platform="p"), seed=0), assign_splits(corpus(platform="q"), seed=0)], ignore_index=True
    )
    out = assign_calibration(both, "q", fraction=0.10, seed=0)
    cal = out[out["split"] == "calibration"]
    assert set(cal["platform"]) == {"q"}
    # 10% of all q's rows per label (a target is judged on every row): 500 -> 50, 300 -> 30, 200 -> 20
    assert cal.groupby("label").size().to_dict() == {"a": 50, "b": 30, "c": 20}
    moved = out["split"] != both["split"]
    assert set(both.loc[moved, "split"]) == {"train", "val", "test"}
    with pytest.raises(InputError, match="already has a calibration split"):
        assign_calibration(out, "q")


def test_a_split_left_with_one_class_is_an_error():
    tiny = corpus(n_per_label=(10, 1, 0))
    with pytest.raises(InputError, match="would hold only class 'a'"):
        assign_splits(tiny)


def test_bad_fractions():
    with pytest.raises(InputError, match="sum to 1"):
        assign_splits(corpus(), train=0.8, val=0.15, test=0.15)


def test_resplitting_keeps_a_stored_calibration_split():
    out = assign_calibration(assign_splits(corpus(), seed=0), "p", fraction=0.1, seed=0)
    again = assign_splits(out, seed=5)
    assert (again["split"] == "calibration").sum() == (out["split"] == "calibration").sum() == 100
    assert again.loc[out["split"] == "calibration", "split"].eq("calibration").all()
