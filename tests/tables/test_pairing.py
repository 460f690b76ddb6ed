"""The one reference rule (each run's reference group, the labels a reference needs) and several runs aligned by id."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.tables.pairing import aligned_codes, check_reference_labels, labels_in_id_order, reference_runs
from mhaudit.tables.predictions import PredictionSet


def _groups(runs: list[tuple[str, int, str]], labels=("a", "b", "a", "b"), ids=("1", "2", "3", "4")) -> dict:
    """One group of four rows per (model, seed, platform); its logits put row i in class i % 2."""
    odd = np.arange(len(ids)) % 2
    frames = [
        pd.DataFrame(
            {
                "id": list(ids),
                "model": m,
                "seed": s,
                "platform": p,
                "dataset": p,
                "split": "test",
                "label": list(labels),
                "logit_a": 1.0 - odd,
                "logit_b": odd.astype(float),
            }
        )
        for m, s, p in runs
    ]
    return PredictionSet(pd.concat(frames, ignore_index=True), ["a", "b"]).groups()


def test_each_run_pairs_with_its_own_reference_or_the_lone_one():
    groups = _groups([("m", 0, "home"), ("m", 1, "home"), ("m", 0, "away"), ("m", 1, "away")])
    refs = [g for g in groups.values() if g.platform == "home"]
    found = reference_runs(refs, [("m", 1), ("m", 0)])
    assert list(found) == [("m", 1), ("m", 0)] and [g.run for g in found.values()] == [("m", 1), ("m", 0)]
    assert all(g.platform == "home" for g in found.values())
    lone = reference_runs(refs[:1], [("m", 1), ("other", 7)])  # one reference run serves every run
    assert [g.run for g in lone.values()] == [("m", 0), ("m", 0)]


@pytest.mark.parametrize(
    "references, runs, message",
    [
        (
            [("m", 0, "home"), ("m", 0, "home2")],
            [("m", 0)],
            "the reference holds model m, seed 0 on 2 data sets (home, home2); a run needs one reference",
        ),
        (
            [("m", 0, "home"), ("m", 1, "home")],
            [("n", 0)],
            "model n, seed 0 has no reference predictions of that model and seed, and the reference holds several runs "
            "(m seed 0, m seed 1), not one for all",
        ),
    ],
)
def test_a_run_needs_one_reference(references, runs, message):
    with pytest.raises(InputError, match=re.escape(message)):
        reference_runs(_groups(references).values(), runs)


def test_a_reference_needs_every_label_and_where_calibrated_every_class():
    with pytest.raises(
        InputError,
        match=re.escape(
            "the reference predictions of model m, seed 0 have 1 of its 4 "
            "rows without a label; a reference is labelled data"
        ),
    ):
        reference_runs(_groups([("m", 0, "home")], labels=("a", None, "a", "b")).values(), [("m", 0)])
    with pytest.raises(InputError, match="seed 0 have no labels"):
        reference_runs(_groups([("m", 0, "home")], labels=(None,) * 4).values(), [("m", 0)])
    one_class = _groups([("m", 0, "home")], labels=("a",) * 4).values()
    assert reference_runs(one_class, [("m", 0)])  # the cross-platform audit does not calibrate on it
    with pytest.raises(InputError, match=r"have no row of class\(es\) b; calibration needs every class"):
        reference_runs(one_class, [("m", 0)], ["a", "b"])
    with pytest.raises(InputError, match="the sample have no row of class"):
        check_reference_labels(np.array([0, 0]), ["a", "b"], "the sample")


def test_runs_align_by_id_whatever_their_row_order():
    groups = _groups([("m", 0, "x"), ("m", 1, "x")])
    backwards = pd.DataFrame(
        {
            "id": ["4", "3", "2", "1"],
            "model": "m",
            "seed": 2,
            "platform": "x",
            "dataset": "x",
            "split": "test",
            "label": ["b", "a", "b", "a"],
            "logit_a": [0.0, 0.0, 1.0, 1.0],
            "logit_b": [1.0, 1.0, 0.0, 0.0],
        }
    )
    groups |= PredictionSet(backwards, ["a", "b"]).groups()
    runs = [("m", 0), ("m", 1), ("m", 2)]
    codes = aligned_codes({g.run: g for g in groups.values()}, runs, "target")
    np.testing.assert_array_equal(codes, [[0, 1, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]])  # ids 1, 2, 3, 4
    assert labels_in_id_order(groups[("m", 2, "x", "x")]).tolist() == [0, 1, 0, 1]
    assert aligned_codes({g.run: g for g in groups.values()}, [*runs, ("m", 9)], "target") is None
    short = _groups([("m", 0, "x")]) | _groups([("m", 1, "x")], labels=("a", "b", "a"), ids=("1", "2", "3"))
    with pytest.raises(
        InputError,
        match=re.escape("the target predictions of m seed 1 cover other rows than those of m seed 0 (3 vs 4 rows)"),
    ):
        aligned_codes({g.run: g for g in short.values()}, [("m", 0), ("m", 1)], "target")
