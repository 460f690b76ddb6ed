"""TSS-Probe Twitter files (stress 0/1): the human-labelled gold sample and the auto-labelled full corpus.

- `tss_gold`: `Twitter_sample_gold.utf8.csv` (header `text,label`). The raw `Twitter_sample_gold.csv` is
  mixed UTF-8/cp1252 with one 0x9D byte that cp1252 cannot decode: read it with `--encoding latin-1`, as
  TSS's loader effectively did (mojibake in the UTF-8 lines).
- `tss_full`: `Twitter_Full.csv`, `;`-separated, header `text;hashtags;labels;;` (the first three kept;
  hashtags are not a corpus column). Its export truncated 3 texts to nothing: import with --drop-empty.
"""

from __future__ import annotations

from mhaudit.tables.corpus.sources.registry import Source, register
from mhaudit.tables.corpus.sources.records import table_reader

GOLD = register(
    Source(
        "tss_gold",
        "TSS Twitter_sample_gold(.utf8).csv (Twitter, stress 0/1, human labels)",
        table_reader("tss_twitter_gold", "twitter", "human", "text", "label"),
        default_mapping="stress-binary",
    )
)
FULL = register(
    Source(
        "tss_full",
        "TSS Twitter_Full.csv, ';'-separated (Twitter, stress 0/1, auto labels)",
        table_reader("tss_twitter_auto", "twitter", "auto", "text", "labels", sep=";"),
        default_mapping="stress-binary",
    )
)
