"""Ensembles of runs (`models.runs`) on the built-in SYNTHETIC corpus: recipes, resamples, folders, predictions."""

import json

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.models import load_model
from mhaudit.models.runs import C_RANGE, bootstrap_rows, read_recipes, run_recipes, summarize_runs, train_runs
from mhaudit.models.seeds import model_folders, predict_folders, training_rows
from mhaudit.synthetic.simulate import SimulationConfig, simulate


@pytest.fixture(scope="module")
def corpus():
    return simulate(SimulationConfig(n_per_platform=160, auto_platforms=()))  # synthetic


def test_recipes_of_a_deterministic_model_draw_a_resample_and_c_per_run():
    recipes = run_recipes("tfidf-lr", 4, base_seed=3)
    assert [r["run"] for r in recipes] == [0, 1, 2, 3] and [r["seed"] for r in recipes] == [3, 4, 5, 6]
    assert len({r["resample_seed"] for r in recipes}) == 4 and len({r["C"] for r in recipes}) == 4
    assert all(C_RANGE[0] <= r["C"] <= C_RANGE[1] for r in recipes)
    # run k comes from default_rng(base + k) alone: the same for any N, and for a later base that covers it
    rng = np.random.default_rng(3)
    assert recipes[0]["resample_seed"] == int(rng.integers(2**31))
    assert recipes[0]["C"] == pytest.approx(float(np.exp(rng.uniform(0.0, np.log(100.0)))), rel=1e-15)
    assert run_recipes("tfidf-lr", 2, base_seed=4)[0] == {**recipes[1], "run": 0}
    assert run_recipes("tfidf-lr", 4, base_seed=3) == recipes
    fixed = run_recipes("char-tfidf-lr", 3, options={"C": 5.0})
    assert [r["C"] for r in fixed] == [5.0, 5.0, 5.0] and len({r["resample_seed"] for r in fixed}) == 3
    narrow = run_recipes("tfidf-lr", 20, c_range=(2.0, 3.0))
    assert all(2.0 <= r["C"] <= 3.0 for r in narrow)


def test_recipes_of_other_models_vary_only_the_seed():
    assert run_recipes("llm-zero-shot", 2, base_seed=7) == [
        {"run": 0, "seed": 7, "resample_seed": None, "C": None},
        {"run": 1, "seed": 8, "resample_seed": None, "C": None},
    ]


@pytest.mark.parametrize("n", [0, -2, True, 2.5, "3"])
def test_a_bad_number_of_runs_is_one_sentence(n, corpus, tmp_path):
    with pytest.raises(InputError, match=r"^the number of runs must be a positive integer, got "):
        train_runs(corpus, "synthetic-forum", "tfidf-lr", n, tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_bad_base_seed_and_c_range():
    with pytest.raises(InputError, match="base seed of the runs must be a non-negative integer, got -1"):
        run_recipes("tfidf-lr", 2, base_seed=-1)
    with pytest.raises(InputError, match=r"range C is drawn from .* got \(5.0, 1.0\)"):
        run_recipes("tfidf-lr", 2, c_range=(5.0, 1.0))


def test_bootstrap_keeps_each_class_count_and_the_val_rows(corpus):
    rows = training_rows(corpus, "synthetic-forum")
    drawn = bootstrap_rows(rows, 11)
    train, val = rows[rows["split"] == "train"], rows[rows["split"] == "val"]
    assert len(drawn) == len(rows)
    pd.testing.assert_series_equal(
        drawn.loc[drawn["split"] == "train", "label"].value_counts().sort_index(),
        train["label"].value_counts().sort_index(),
    )
    pd.testing.assert_frame_equal(drawn[drawn["split"] == "val"].reset_index(drop=True), val.reset_index(drop=True))
    ids = drawn.loc[drawn["split"] == "train", "id"]
    assert ids.duplicated().any() and ids.nunique() < len(train)  # with replacement: about 63% are distinct
    assert 0.5 < ids.nunique() / len(train) < 0.75
    pd.testing.assert_frame_equal(bootstrap_rows(rows, 11), drawn)
    assert not bootstrap_rows(rows, 12)["id"].equals(drawn["id"])


def test_train_runs_folders_rerun_predictions_and_reproducibility(corpus, tmp_path):
    out = tmp_path / "ens"
    folders = train_runs(corpus, "synthetic-forum", "tfidf-lr", 3, out)
    assert [f.name for f in folders] == ["run-0", "run-1", "run-2"]
    recipes = read_recipes(folders)
    assert recipes["seed"].tolist() == [0, 1, 2] and recipes["resample_seed"].nunique() == 3
    assert recipes["C"].nunique() == 3 and (recipes["platform"] == "synthetic-forum").all()
    n_train = int(((corpus.frame["platform"] == "synthetic-forum") & (corpus.frame["split"] == "train")).sum())
    assert (recipes["n_train"] == n_train).all() and (recipes["seconds"] > 0).all()
    model = load_model(folders[1])
    assert model.options["seed"] == 1 and model.options["C"] == recipes["C"][1] and model.recipe["run"] == 1

    stamps = [(f / "pipeline.joblib").stat().st_mtime_ns for f in folders]
    assert train_runs(corpus, "synthetic-forum", "tfidf-lr", 3, out) == folders  # finished runs are kept
    assert [(f / "pipeline.joblib").stat().st_mtime_ns for f in folders] == stamps
    more = train_runs(corpus, "synthetic-forum", "tfidf-lr", 4, out)  # a fourth run adds run-3 only
    assert [(f / "pipeline.joblib").stat().st_mtime_ns for f in more[:3]] == stamps and more[3].name == "run-3"

    table = predict_folders(model_folders(out), corpus, ("test",))
    n_test = int((corpus.frame["split"] == "test").sum())
    assert len(table) == 4 * n_test and sorted(table["seed"].unique()) == [0, 1, 2, 3]
    logits = {s: g.filter(like="logit_").to_numpy() for s, g in table.groupby("seed")}
    assert not np.allclose(logits[0], logits[1])  # another resample and C: other scores
    assert all(
        (g["id"].to_numpy() == table[table["seed"] == 0]["id"].to_numpy()).all() for _, g in table.groupby("seed")
    )  # the runs pair by id, row for row
    again = predict_folders(train_runs(corpus, "synthetic-forum", "tfidf-lr", 2, tmp_path / "again"), corpus, ("test",))
    np.testing.assert_array_equal(again[again["seed"] == 1].filter(like="logit_").to_numpy(), logits[1])
    assert summarize_runs(more) == (
        f"4 runs of tfidf-lr (seeds 0-3): bootstrap resamples, C "
        f"{read_recipes(more)['C'].min():.3g}-{read_recipes(more)['C'].max():.3g}"
    )


def test_a_kept_run_must_match_the_recipe_asked_for(corpus, tmp_path):
    train_runs(corpus, "synthetic-forum", "tfidf-lr", 1, tmp_path / "m")
    with pytest.raises(InputError, match=r"run-0 already holds a run of tfidf-lr made as .*'seed': 0.*'seed': 5"):
        train_runs(corpus, "synthetic-forum", "tfidf-lr", 1, tmp_path / "m", base_seed=5)
    with pytest.raises(InputError, match="not the char-tfidf-lr run asked for"):
        train_runs(corpus, "synthetic-forum", "char-tfidf-lr", 1, tmp_path / "m")


def test_two_folders_with_one_seed_are_refused_by_predict(corpus, tmp_path):
    train_runs(corpus, "synthetic-forum", "tfidf-lr", 1, tmp_path / "m")
    (tmp_path / "m" / "seed-0").mkdir()
    for name in ("mhaudit-model.json", "pipeline.joblib"):
        (tmp_path / "m" / "seed-0" / name).write_bytes((tmp_path / "m" / "run-0" / name).read_bytes())
    folders = model_folders(tmp_path / "m")
    assert [f.name for f in folders] == ["seed-0", "run-0"]
    with pytest.raises(InputError, match="both hold tfidf-lr seed 0; their predictions would be one group"):
        predict_folders(folders, corpus, ("test",))


def test_run_folders_sort_by_number(tmp_path):
    for k in (10, 2, 0):
        (tmp_path / f"run-{k}").mkdir()
        (tmp_path / f"run-{k}" / "mhaudit-model.json").write_text(json.dumps({}))
    assert [f.name for f in model_folders(tmp_path)] == ["run-0", "run-2", "run-10"]


def test_torch_runs_differ_by_seed_alone(corpus, tmp_path):
    pytest.importorskip("torch")
    tiny = pytest.importorskip("tests.models.tiny_bert")
    checkpoint = tiny.tiny_checkpoint(tmp_path / "tiny", len(corpus.classes))
    options = {"checkpoint": str(checkpoint), "epochs": 1, "batch_size": 16, "max_length": 32}
    folders = train_runs(corpus, "synthetic-forum", "transformer", 2, tmp_path / "t", base_seed=4, options=options)
    recipes = read_recipes(folders)
    assert recipes["seed"].tolist() == [4, 5] and recipes["resample_seed"].isna().all() and recipes["C"].isna().all()
    table = predict_folders(folders, corpus, ("test",))
    first, second = (g.filter(like="logit_").to_numpy() for _, g in table.groupby("seed"))
    assert not np.allclose(first, second)  # another head initialisation and batch order
    assert summarize_runs(folders) == "2 runs of transformer (seeds 4-5)"
