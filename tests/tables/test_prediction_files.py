"""Prediction files shaped like the ones researchers publish: several files per model, integer labels,
prob_/logit_ columns, no ids. All data here is SYNTHETIC (generated below)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.stats.calibration import softmax
from mhaudit.tables.prediction_files import name_regex, predictions_from_arrays, read_predictions

CLASSES = ["normal", "depression", "anxiety", "stress"]
PATTERN = "{model}_{platform}_seed{seed}_predictions"
FAST = dict(n_boot_significance=200, n_boot_ece=100, figures=False)


def published(
    tmp_path,
    models=("bert", "roberta"),
    seeds=(42, 7),
    platforms=("reddit", "twitter"),
    n=300,
    fmt="csv",
    ids=False,
    text=False,
    platform_column=False,
    rng=0,
):
    """SYNTHETIC files named like `bert_reddit_seed42_predictions.csv`: integer label, prob_ and logit_
    columns, no model/seed/platform columns; every model scores the same examples in the same order."""
    rng = np.random.default_rng(rng)
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = []
    for platform in platforms:
        y = rng.choice(4, size=n, p=[0.4, 0.2, 0.2, 0.2])
        texts = [f"synthetic post {platform} {i}" for i in range(n)]
        for model in models:
            for seed in seeds:
                logits = 2.0 * np.eye(4)[y] * (1.0 if platform == platforms[0] else 0.4) + rng.normal(size=(n, 4))
                frame = pd.DataFrame({"label": y})
                if ids:
                    frame.insert(0, "id", [f"{platform}-{i}" for i in range(n)])
                if text:
                    frame["text"] = texts
                if platform_column:
                    frame["platform"] = platform
                frame[[f"logit_{c}" for c in CLASSES]] = logits
                frame[[f"prob_{c}" for c in CLASSES]] = softmax(logits)
                path = tmp_path / f"{model}_{platform}_seed{seed}_predictions.{fmt}"
                frame.to_parquet(path) if fmt == "parquet" else frame.to_csv(path, index=False)
                paths.append(path)
    return paths


def test_published_files_read_with_a_name_pattern(tmp_path):
    paths = published(tmp_path)
    preds = read_predictions([str(tmp_path / "*_predictions.csv")], name_pattern=PATTERN)
    frame = preds.frame
    assert preds.classes == CLASSES and preds.score_kind == "logits"
    assert frame.groupby(["model", "seed", "platform"]).size().to_dict() == {
        (m, s, p): 300 for m in ("bert", "roberta") for s in (7, 42) for p in ("reddit", "twitter")
    }
    assert set(frame["label"]) == set(CLASSES) and len(preds.fingerprints) == len(paths) == 8
    assert any("0 = normal, 1 = depression, 2 = anxiety, 3 = stress" in n for n in preds.notes)
    assert any("matched across models by position" in n for n in preds.notes)
    assert len(preds.positional) == 8


def test_name_pattern_fields():
    match = name_regex(PATTERN).match("bert-base_reddit_seed42_predictions")
    assert match.groupdict() == {"model": "bert-base", "platform": "reddit", "seed": "42"}
    with pytest.raises(InputError, match="'run' is not one"):
        name_regex("{model}_{run}")


def test_the_same_file_set_in_one_command(tmp_path):
    """`--predictions a b c ...` (several paths after one flag) with --name-pattern: the whole audit."""
    paths = published(tmp_path, seeds=(42,))
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app,
        [
            "audit",
            "cpfe",
            "--predictions",
            *map(str, paths),
            "--name-pattern",
            PATTERN,
            "--reference",
            "reddit",
            "--out",
            str(out),
            "--n-boot-significance",
            "200",
            "--n-boot-ece",
            "100",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (out / "report.json").exists()
    import json

    written = json.loads((out / "report.json").read_text())
    tables = {name: rows for s in written["sections"] for name, rows in s["tables"].items()}
    comparison = [r for r in tables["model_comparison"] if r["test"] == "paired bootstrap, macro-AUC"]
    assert len(comparison) == 2 and {r["paired_by"] for r in comparison} == {"position"}
    assert "integer labels were read as indices" in written["summary"]
    assert {(r["model"], r["platform"]) for r in tables["discrimination"]} == {
        ("bert", "reddit"),
        ("bert", "twitter"),
        ("roberta", "reddit"),
        ("roberta", "twitter"),
    }


def test_silent_pooling_is_an_error_naming_both_files(tmp_path):
    paths = published(tmp_path, platform_column=True)
    with pytest.raises(InputError) as error:
        read_predictions(paths, model="x", seed=0)  # 8 runs would pool into 2 groups
    message = str(error.value)
    assert "bert_reddit_seed42_predictions.csv and " in message
    assert "both hold predictions of model x, seed 0" in message
    result = CliRunner().invoke(
        app,
        [
            "audit",
            "cpfe",
            "--predictions",
            *map(str, paths),
            "--model",
            "x",
            "--model-seed",
            "0",
            "--reference",
            "reddit",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2 and "both hold predictions" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_renamed_ids_and_reordered_files_give_the_same_temperature(tmp_path):
    """The drawn calibration split depends on content and seed only (no stored calibration split here)."""
    positional = published(tmp_path / "a", seeds=(42,), models=("bert",))
    with_ids = published(tmp_path / "b", seeds=(42,), models=("bert",), ids=True)
    renamed = tmp_path / "c"
    renamed.mkdir()
    for path in with_ids:  # other id spelling, rows shuffled
        frame = pd.read_csv(path)
        frame["id"] = "post_" + frame["id"].str.replace("-", "_") + "_x"
        frame.sample(frac=1.0, random_state=3).to_csv(renamed / path.name, index=False)
    options = CPFEOptions(reference="reddit", **FAST)
    temperatures = []
    for paths in (positional, with_ids, sorted(renamed.iterdir(), reverse=True)):
        result = audit_cpfe(CPFEInputs(read_predictions(paths, name_pattern=PATTERN)), options)
        table = result.table("temperature_scaling").set_index("platform")
        temperatures.append(table["temperature"].round(10).to_dict())
    assert temperatures[0] == temperatures[1] == temperatures[2]
    assert all(0.1 < t < 20 for t in temperatures[0].values())


def test_rows_without_ids_pair_only_when_they_line_up(tmp_path):
    paths = published(tmp_path, seeds=(42,), text=True)
    shuffled = pd.read_csv(paths[1]).sample(frac=1.0, random_state=0)  # roberta on reddit, rows reordered
    shuffled.to_csv(paths[1], index=False)
    result = audit_cpfe(
        CPFEInputs(read_predictions(paths, name_pattern=PATTERN)), CPFEOptions(reference="reddit", **FAST)
    )
    comparison = result.table("model_comparison").set_index("platform")
    assert comparison.loc["reddit", "paired_by"] == ""
    assert "rows without ids do not line up (first at row" in comparison.loc["reddit", "reason"]
    twitter = comparison.loc[["twitter"]]
    assert set(twitter["paired_by"]) == {"position"} and (twitter["reason"] == "").all()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda paths: [str(paths[0].parent / "nothing_*.csv")], "the glob '.*nothing_\\*.csv' matches no file"),
        (
            lambda paths: [paths[0], paths[0].with_name("other.csv")],
            "the file name 'other' does not match --name-pattern",
        ),
    ],
)
def test_globs_and_patterns_that_match_nothing(tmp_path, change, message):
    paths = published(tmp_path, models=("bert",), seeds=(42,))
    pd.read_csv(paths[0]).to_csv(paths[0].with_name("other.csv"), index=False)
    with pytest.raises(InputError, match=message):
        read_predictions(change(paths), name_pattern=PATTERN)


def test_bad_files_in_a_set(tmp_path):
    paths = published(tmp_path, models=("bert",), seeds=(42,))
    frame = pd.read_csv(paths[0])
    broken = {
        "index": (frame.assign(label=[7] + frame["label"].tolist()[1:]), "row 1: label index 7 is beyond the 4 score"),
        "nan": (frame.assign(prob_stress=np.nan), "row 1: score column 'prob_stress' is empty"),
        "disagree": (
            frame.assign(prob_normal=frame["prob_depression"], prob_depression=frame["prob_normal"]),
            "softmax of the logit_ columns differs from the prob_ columns",
        ),
        "columns": (frame.drop(columns=["logit_stress", "prob_stress"]), "have different columns"),
    }
    for what, (bad, message) in broken.items():
        bad.to_csv(paths[0], index=False)
        with pytest.raises(InputError, match=message):
            read_predictions(paths, name_pattern=PATTERN)
    frame.drop(columns=[c for c in frame.columns if c.startswith("logit_")]).assign(
        prob_normal=frame["prob_normal"] + 0.1
    ).to_csv(paths[0], index=False)
    only_probs = pd.read_csv(paths[1]).drop(columns=[c for c in frame.columns if c.startswith("logit_")])
    only_probs.to_csv(paths[1], index=False)
    with pytest.raises(InputError, match="probabilities sum to"):
        read_predictions(paths, name_pattern=PATTERN)


def test_csv_and_parquet_mixed(tmp_path):
    csv = published(tmp_path, models=("bert",), seeds=(42,), platforms=("reddit",))
    parquet = published(tmp_path, models=("bert",), seeds=(42,), platforms=("twitter",), fmt="parquet")
    preds = read_predictions([*csv, *parquet], name_pattern=PATTERN)
    assert preds.frame.groupby("platform").size().to_dict() == {"reddit": 300, "twitter": 300}
    frame = pd.read_parquet(parquet[0])
    frame.assign(extra=1).to_parquet(parquet[0])
    with pytest.raises(
        InputError,
        match=r"twitter_seed42_predictions.parquet and .*reddit_seed42_predictions.csv "
        r"have different columns \(it has extra\)",
    ):
        read_predictions([*csv, *parquet], name_pattern=PATTERN)


def test_arrays_and_frames_the_way_fairlearn_takes_them():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    scores = softmax(2 * np.eye(3)[y] + rng.normal(size=(200, 3)))
    platform = np.where(np.arange(200) < 100, "reddit", "bluesky")
    preds = predictions_from_arrays(y, scores, platform, model="mine", seed=1, classes=["a", "b", "c"])
    assert preds.classes == ["a", "b", "c"] and preds.frame.groupby("platform").size().to_dict() == {
        "bluesky": 100,
        "reddit": 100,
    }
    np.testing.assert_allclose(softmax(preds.frame[["logit_a", "logit_b", "logit_c"]].to_numpy()), scores, atol=1e-9)
    assert (preds.frame["label"].to_numpy() == np.array(["a", "b", "c"])[y]).all()
    result = audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="reddit", **FAST))
    auc = result.table("discrimination").set_index("platform")["macro_auc"]
    from sklearn.metrics import roc_auc_score

    assert auc["bluesky"] == pytest.approx(roc_auc_score(y[100:], scores[100:], multi_class="ovr"), abs=1e-12)
    frame = pd.DataFrame({"label": y, "platform": platform, **{f"prob_{c}": scores[:, i] for i, c in enumerate("abc")}})
    assert read_predictions(frame).frame["label"].tolist() == preds.frame["label"].tolist()
    with pytest.raises(InputError, match="scores have 3 columns but there are 2 classes"):
        predictions_from_arrays(y, scores, "reddit", classes=["a", "b"])


def test_a_hugging_face_dataset():
    datasets = pytest.importorskip("datasets")
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 50)
    p = rng.uniform(0.05, 0.95, 50)
    data = datasets.Dataset.from_dict(
        {
            "label": y.tolist(),
            "platform": ["reddit"] * 50,
            "prob_neg": (1 - p).tolist(),
            "prob_pos": p.tolist(),
            "id": [f"r{i}" for i in range(50)],
        }
    )
    preds = read_predictions(data)
    assert preds.classes == ["neg", "pos"] and len(preds.frame) == 50 and not preds.positional
    assert (preds.frame["label"] == np.array(["neg", "pos"])[y]).all()


def test_identical_seeds_count_as_one_run(tmp_path):
    """A deterministic model (e.g. TF-IDF) gives the same predictions for every seed: not an SD of 0.000."""
    paths = published(tmp_path, models=("tfidf",), seeds=(42,), ids=True)
    for path in list(paths):  # the same file under seeds 7 and 42
        copy = path.with_name(path.name.replace("seed42", "seed7"))
        copy.write_bytes(path.read_bytes())
        paths.append(copy)
    result = audit_cpfe(
        CPFEInputs(read_predictions(paths, name_pattern=PATTERN)), CPFEOptions(reference="reddit", **FAST)
    )
    with pytest.raises(KeyError):  # one run per model: no "mean and SD over seeds" of n/a
        result.table("mean and SD over seeds")
    assert "counted as one run" in result.summary and "tfidf (seeds 7, 42)" in result.summary
    assert len(result.table("discrimination")) == 4  # each seed still has its own rows
