"""Kaggle "Sentiment Analysis for Mental Health" (`Combined Data.csv`): ~53k statements, 7 statuses.

Columns: an unnamed pandas index, `statement`, `status`; no official split. The released file has some empty
statements: import it with --drop-empty. Ids are '<dataset>-<index value>' (the row number without an index).
"""

from __future__ import annotations

from mhaudit.tables.corpus.sources.registry import Source, register
from mhaudit.tables.corpus.sources.records import table_reader

SOURCE = register(
    Source(
        "kaggle_mh",
        "Kaggle 'Sentiment Analysis for Mental Health' Combined Data.csv (7 statuses, no split)",
        table_reader("kaggle_mh", "kaggle", "mixed", "statement", "status", indexed=True),
        default_mapping="kaggle-cpfe",
        classes=["Normal", "Depression", "Suicidal", "Anxiety", "Bipolar", "Stress", "Personality disorder"],
    )
)
