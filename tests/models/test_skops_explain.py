"""Linear attributions of researchers' scikit-learn pipelines (saved with skops), fitted here on real shared data:
`mhaudit explain --model X.skops --method linear` gives coefficient x feature value averaged over the texts, the
same numbers as a brute-force computation and as mhaudit's own TF-IDF model on the same pipeline; a pipeline that
is not linear, or a mapping that merges classes, is refused in one sentence and nothing is written."""

from __future__ import annotations

import json

import joblib

import numpy as np
import pandas as pd
import pytest
import skops.io
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import RandomForestClassifier
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.models.base import attribution_methods, check_attribution_method
from mhaudit.models.linear import TfidfLogistic
from mhaudit.models.skops_pipeline import load_skops_pipeline
from mhaudit.tables.corpus.importing import ImportOptions, import_source
from tests.cli_checks import assert_one_sentence_failure
from tests.conftest import data_dir

N = 60  # texts explained per (platform, data set)


@pytest.fixture(scope="module")
def reddit(tmp_path_factory):
    """The Depression Reddit corpus as `mhaudit data import` writes it, and a TF-IDF (uni+bigram) logistic pipeline
    fitted on its train rows with the labels as the data set publishes them (0/1), saved with skops."""
    folder = tmp_path_factory.mktemp("skops-explain")
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    corpus = import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus
    corpus.write(folder / "reddit.parquet")
    train = corpus.frame[corpus.frame["split"] == "train"]
    y = (train["label"] == "depression").astype(int).to_numpy()
    pipeline = make_pipeline(TfidfVectorizer(min_df=2, ngram_range=(1, 2)), LogisticRegression(max_iter=1000))
    pipeline.fit(train["text"].tolist(), y)
    skops.io.dump(pipeline, folder / "depression.skops")
    return folder, corpus, pipeline


def brute_force(pipeline, texts: list[str], class_of_row: list[str]) -> dict[tuple[str, str], float]:
    """Per (class, word): the mean over texts of coefficient x feature value, each n-gram's share split equally
    over its words, from dense arrays and plain loops."""
    values = pipeline[:-1].transform(texts).toarray()
    names = pipeline[:-1].get_feature_names_out()
    coef = pipeline[-1].coef_
    rows = [-coef[0], coef[0]] if len(coef) == 1 else list(coef)
    scores: dict[tuple[str, str], float] = {}
    for class_name, row in zip(class_of_row, rows):
        for j, name in enumerate(names):
            present = values[:, j] > 0
            if not present.any():
                continue
            contribution = sum(row[j] * values[i, j] for i in range(len(texts))) / len(texts)
            words = name.split()
            for word in words:
                scores[class_name, word] = scores.get((class_name, word), 0.0) + contribution / len(words)
    return scores


def invoke(*args: str):
    return CliRunner().invoke(app, ["explain", *args])


def test_mhaudit_explain_on_a_skops_pipeline_is_coefficient_times_feature_value(reddit):
    folder, corpus, pipeline = reddit
    out = folder / "attributions.parquet"
    args = ["--model", str(folder / "depression.skops"), "--corpus", str(folder / "reddit.parquet")]
    done = invoke(*args, "--mapping", "depression-binary", "--method", "linear", "--n", str(N), "--out", str(out))
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(out)
    assert set(table["model"]) == {"skops-pipeline"} and set(table["method"]) == {"linear"}
    assert set(table["class"]) == {"no_depression", "depression"} and set(table["seed"]) == {0}
    drawn = corpus.frame[corpus.frame["split"] == "test"].sample(n=N, random_state=0)["text"].tolist()
    expected = brute_force(pipeline, drawn, ["no_depression", "depression"])
    got = {(c, w): s for c, w, s in zip(table["class"], table["word"], table["score"])}
    assert got.keys() == expected.keys() and len(got) > 1000
    assert max(abs(got[key] - expected[key]) for key in got) < 1e-12
    top = table[table["class"] == "depression"].nlargest(1, "score")["word"].iat[0]
    assert got["depression", top] > 0 and got["no_depression", top] == pytest.approx(-got["depression", top])
    # the same pipeline as a pickle: read only with --trust-pickle, then the same table
    joblib.dump(pipeline, folder / "depression.joblib")
    args = ["--model", str(folder / "depression.joblib"), "--corpus", str(folder / "reddit.parquet"), "--n", str(N)]
    args += ["--mapping", "depression-binary", "--method", "linear", "--out", str(folder / "pickled.parquet")]
    assert_one_sentence_failure(invoke(*args), "loading a pickle runs code")
    assert not (folder / "pickled.parquet").exists()
    assert invoke(*args, "--trust-pickle").exit_code == 0
    pd.testing.assert_frame_equal(pd.read_parquet(folder / "pickled.parquet"), table)


def test_counts_then_tfidf_then_sgd_with_string_classes(reddit):
    """CountVectorizer then TfidfTransformer, SGDClassifier with log loss, string classes (dair-ai/emotion)."""
    folder = reddit[0]
    raw = pd.read_csv(data_dir("dair_emotion") / "train.txt", sep=";", names=["text", "label"]).groupby("label")
    rows = raw.head(80)
    pipeline = make_pipeline(CountVectorizer(), TfidfTransformer(), SGDClassifier(loss="log_loss", random_state=0))
    pipeline.fit(rows["text"].tolist(), rows["label"].to_numpy())
    skops.io.dump(pipeline, folder / "emotion.skops")
    model = load_skops_pipeline(folder / "emotion.skops")
    assert attribution_methods(model) == ["linear"]
    texts = raw.tail(5)["text"].tolist()
    table = model.explain(texts)
    expected = brute_force(pipeline, texts, list(pipeline.classes_))
    got = {(c, w): s for c, w, s in zip(table["class"], table["word"], table["score"])}
    assert got.keys() == expected.keys() and set(table["class"]) == set(pipeline.classes_)
    assert max(abs(got[key] - expected[key]) for key in got) < 1e-12


def test_a_character_pipeline_explains_as_mhaudits_own_model_does(reddit):
    """The same char_wb pipeline inside mhaudit's TF-IDF model and loaded from skops: one function, one table."""
    folder, corpus, _ = reddit
    train = corpus.frame[corpus.frame["split"] == "train"].sample(600, random_state=0)
    own = TfidfLogistic(analyzer="char_wb", ngram_range=(3, 5), calibrate=False)
    y = (train["label"] == "depression").astype(int).to_numpy()
    own.pipeline.fit(train["text"].tolist(), y)
    own.classes = ["no_depression", "depression"]
    skops.io.dump(own.pipeline, folder / "chars.skops")
    outside = load_skops_pipeline(folder / "chars.skops", mapping="depression-binary")
    texts = corpus.frame[corpus.frame["split"] == "test"]["text"].head(8).tolist()
    mine, theirs = own.explain(texts), outside.explain(texts)
    pd.testing.assert_frame_equal(mine, theirs)
    assert len(mine) > 50 and " " not in "".join(mine["word"])  # character n-grams given to whole words


@pytest.mark.parametrize(
    ("classifier", "fragment"),
    [
        (RandomForestClassifier(n_estimators=5, random_state=0), "its last step, RandomForestClassifier, has no coef_"),
        (CalibratedClassifierCV(LinearSVC(), cv=2), "its last step, CalibratedClassifierCV, has no coef_"),
    ],
)
def test_a_pipeline_that_is_not_linear_has_no_attribution_method(reddit, classifier, fragment):
    folder, corpus, _ = reddit
    train = corpus.frame[corpus.frame["split"] == "train"].sample(300, random_state=0)
    pipeline = make_pipeline(TfidfVectorizer(), classifier).fit(train["text"].tolist(), train["label"].tolist())
    path = folder / f"{type(classifier).__name__}.skops"
    skops.io.dump(pipeline, path)
    out = folder / "refused" / "attributions.parquet"
    args = ["--model", str(path), "--corpus", str(folder / "reddit.parquet"), "--method", "linear", "--out", str(out)]
    assert_one_sentence_failure(
        invoke(*args), "model 'skops-pipeline' has no attribution method, not 'linear'", fragment
    )
    assert not out.parent.exists()
    with pytest.raises(InputError, match="supports only linear, not 'saliency'"):
        check_attribution_method(
            load_skops_pipeline(folder / "depression.skops", mapping="depression-binary"), "saliency"
        )


def test_a_mapping_that_merges_classes_is_refused_for_linear_attributions(reddit):
    """dair-cpfe-text sends joy, love and surprise to 'normal': that class's probability is a sum, no coefficient's."""
    folder = reddit[0]
    raw = pd.read_csv(data_dir("dair_emotion") / "train.txt", sep=";", names=["text", "label"])
    rows = raw.groupby("label").head(50)
    pipeline = make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=1000))
    skops.io.dump(pipeline.fit(rows["text"].tolist(), rows["label"].to_numpy()), folder / "six.skops")
    out = folder / "merged.parquet"
    args = ["--model", str(folder / "six.skops"), "--corpus", str(folder / "reddit.parquet"), "--method", "linear"]
    message = assert_one_sentence_failure(
        invoke(*args, "--mapping", "dair-cpfe-text", "--out", str(out)),
        "model 'skops-pipeline' has no attribution method, not 'linear'",
        "mapping 'dair-cpfe-text' merges the pipeline's classes joy, love, surprise into normal",
    )
    assert "probability is their sum" in message and not out.exists()
    assert attribution_methods(load_skops_pipeline(folder / "six.skops")) == ["linear"]  # unmapped: six classes


def test_features_that_are_not_the_vectorizers_terms_are_refused(reddit):
    from sklearn.decomposition import TruncatedSVD

    folder, corpus, _ = reddit
    train = corpus.frame[corpus.frame["split"] == "train"].sample(300, random_state=0)
    pipeline = make_pipeline(TfidfVectorizer(), TruncatedSVD(20, random_state=0), LogisticRegression())
    skops.io.dump(pipeline.fit(train["text"].tolist(), train["label"].tolist()), folder / "svd.skops")
    with pytest.raises(InputError, match="its classifier's features are not the vectorizer's terms") as caught:
        check_attribution_method(load_skops_pipeline(folder / "svd.skops"), "linear")
    assert "has no attribution method, not 'linear'" in str(caught.value)


def top_words(table: pd.DataFrame, k: int = 10) -> dict[tuple[str, str], set[str]]:
    """Per (data set, class): the k best-scored words, ties to the alphabetically first."""
    ranked = table.sort_values(["score", "word"], ascending=[False, True])
    return {key: set(rows["word"].head(k)) for key, rows in ranked.groupby(["dataset", "class"])}


def test_the_cpfe_audit_judges_an_outside_models_attributions(reddit):
    """Depression Reddit (home) and the Bluesky depression set: `mhaudit predict` and `mhaudit explain` with the
    skops pipeline, then `mhaudit audit cpfe --attributions`: axis 5's Jaccard verdict for the outside model is the
    mean over classes of the top-10 words' Jaccard overlap, computed here from the table."""
    from mhaudit.tables.corpus.schema import merge_corpora

    folder = reddit[0]
    csv = data_dir("bluesky_depression") / "bluesky-depression-dataset.csv"
    import_source("bluesky_depression", [csv], ImportOptions(seed=0)).corpus.write(folder / "bluesky.parquet")
    merge_corpora([folder / "reddit.parquet", folder / "bluesky.parquet"]).write(folder / "both.parquet")
    model = ["--model", str(folder / "depression.skops"), "--mapping", "depression-binary"]
    corpus = ["--corpus", str(folder / "both.parquet")]
    run = CliRunner().invoke
    done = run(app, ["predict", *model, *corpus, "--out", str(folder / "predictions.parquet")])
    assert done.exit_code == 0, done.output
    done = run(app, ["explain", *model, *corpus, "--method", "linear", "--out", str(folder / "words.parquet")])
    assert done.exit_code == 0, done.output
    audit = ["audit", "cpfe", "--predictions", str(folder / "predictions.parquet"), "--reference", "reddit"]
    fast = ["--n-boot-significance", "200", "--n-boot-ece", "100"]
    words = ["--attributions", str(folder / "words.parquet")]
    done = run(app, [*audit, *fast, *words, "--out", str(folder / "audit")])
    assert done.exit_code == 0, done.output
    report = json.loads((folder / "audit" / "report.json").read_text())
    verdicts = pd.DataFrame(report["verdicts"]).query("statistic == 'jaccard_top10'")
    assert set(verdicts["subject"]) == {"skops-pipeline seed 0"}  # one verdict row per rule (0.30, 0.10)
    assert set(verdicts["target"]) == {"bluesky (bluesky_depression)"} and len(verdicts) == 2
    top = top_words(pd.read_parquet(folder / "words.parquet"))
    overlaps = [
        len(top["depression_reddit_cleaned", c] & top["bluesky_depression", c])
        / len(top["depression_reddit_cleaned", c] | top["bluesky_depression", c])
        for c in ("no_depression", "depression")
    ]
    assert verdicts["value"].tolist() == pytest.approx([np.mean(overlaps)] * 2, abs=1e-12)
    assert 0 < np.mean(overlaps) < 1
