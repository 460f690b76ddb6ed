"""Dreaddit's training split, parsed once per run: the style and the morphosyntax tests both read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import data_dir


@pytest.fixture(scope="session")
def dreaddit_train_parsed():
    """(the 2,838 training rows of Dreaddit, their parses): ~25 s on 2 cores the first time, then from the
    session's parse cache."""
    from mhaudit.tables.corpus.importing import import_source
    from mhaudit.text.parse import parse_texts

    folder = data_dir("dreaddit")
    frame = import_source("dreaddit", sorted(Path(folder).glob("*.csv"))).corpus.frame
    train = frame[frame["split"] == "train"]
    return train, parse_texts(train["text"].tolist())
