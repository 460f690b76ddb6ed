"""Real weak labelers of the Bluesky depression set's first 400 posts, for the `labels combine` tests: the three
shipped lexicons through `mhaudit labels lexicon` (into a label store), a keyword rule written here (kind llm in a
labels file: 1 for a first-person post naming depression, 0 for a post with a link or news words, no row
otherwise), a TF-IDF + logistic regression trained on 2,000 Depression Reddit posts as kind `model`, and the data
set's experts as kind human (into the store). Read in place from ../shared/data; skipped when it is absent."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.tables.corpus.importing import ImportOptions, import_source
from mhaudit.tables.label_store import labels_frame, write_labels
from tests.conftest import data_dir

ITEMS = 400
LEXICONS = {"si": "lexicon:si@b3e585a49a9b", "mh": "lexicon:mh@ee7f3c894ccc", "wide": "lexicon:wide@1bbc0658ab9e"}
FIRST_PERSON = re.compile(r"\b(i|i'm|im|me|my)\b", re.I)
DEPRESSION = re.compile(r"depress|hopeless|worthless|empty inside", re.I)
NEWS = re.compile(r"https?://|\bnews\b|\bstudy\b|\breport", re.I)


@dataclass(frozen=True)
class Sources:
    store: Path  # lexicons and experts
    keywords: Path  # the keyword rule (kind llm)
    model: Path  # the classifier's predicted labels (kind model)
    items: pd.DataFrame  # id, text, label

    @property
    def files(self) -> list[str]:
        return [str(self.store), str(self.keywords), str(self.model)]


def keyword_labels(items: pd.DataFrame) -> pd.DataFrame:
    votes = [
        (item, 1 if FIRST_PERSON.search(text) and DEPRESSION.search(text) else 0)
        for item, text in zip(items["id"], items["text"])
        if (FIRST_PERSON.search(text) and DEPRESSION.search(text)) or NEWS.search(text)
    ]
    frame = pd.DataFrame(votes, columns=["item_id", "value"])
    return labels_frame(frame["item_id"], {"keywords": ("llm", frame["value"].to_numpy())}, "mh")


def build_sources(folder: Path) -> Sources:
    raw = data_dir("bluesky_depression") / "bluesky-depression-dataset.csv"
    reddit = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    corpus = import_source("bluesky_depression", [raw], ImportOptions()).corpus.frame
    items = corpus.head(ITEMS)[["id", "text", "label"]]
    items.to_parquet(folder / "items.parquet")
    store = folder / "labels.sqlite"
    runner = CliRunner()
    for lexicon in LEXICONS:
        args = ["labels", "lexicon", "--items", str(folder / "items.parquet"), "--task", "mh", "--lexicon", lexicon]
        result = runner.invoke(app, [*args, "--labels", str(store)])
        assert result.exit_code == 0, result.output
    experts = (items["label"] == "depression").astype(int).to_numpy()
    write_labels(labels_frame(items["id"], {"experts": ("human", experts)}, "mh"), folder / "experts.csv")
    result = runner.invoke(app, ["labels", "import", str(folder / "experts.csv"), "--labels", str(store)])
    assert result.exit_code == 0, result.output
    train = pd.read_csv(reddit).dropna(subset=["text"]).sample(2000, random_state=0)
    pipeline = make_pipeline(TfidfVectorizer(min_df=2), LogisticRegression(max_iter=1000))
    predicted = pipeline.fit(train["text"], train["is_depressive"]).predict(items["text"])
    model = write_labels(labels_frame(items["id"], {"tfidf-lr": ("model", predicted)}, "mh"), folder / "model.parquet")
    keywords = write_labels(keyword_labels(items), folder / "keywords.parquet")
    return Sources(store, keywords, model, items)
