"""Bluesky depression data set (aliciamarzola): 4,568 posts, `depressive` 0/1 by two clinical psychologists.

Columns: unnamed index, text (quoted, with newlines), repostCount, replyCount, likeCount, link, image,
createdAt, depressive. `created_at` comes from createdAt. The `link` column is never read into the corpus
(privacy: in the published data set it can point at accounts). No official split; ids as kaggle_mh's.
"""

from __future__ import annotations

from mhaudit.tables.corpus.sources.registry import Source, register
from mhaudit.tables.corpus.sources.records import table_reader

SOURCE = register(
    Source(
        "bluesky_depression",
        "Bluesky depression CSV (Bluesky, depressive 0/1, clinician labels)",
        table_reader(
            "bluesky_depression", "bluesky", "human", "text", "depressive", created_at="createdAt", indexed=True
        ),
        default_mapping="depression-binary",
    )
)
