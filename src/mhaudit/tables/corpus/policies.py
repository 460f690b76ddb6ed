"""How a row with several raw labels becomes one labelled row: an enum only, so the CLI can offer the
choices without loading pandas."""

from __future__ import annotations

from enum import Enum


class MultiLabelPolicy(str, Enum):
    """How a row with several raw labels becomes one labelled row."""

    first = "first"  # the first listed label (the CPFE released code); dropped if the mapping drops it
    expand = "expand"  # one row per assigned label, id '<id>:<raw label>'
    priority = "priority"  # the highest-priority class among the mapped labels
    drop_ambiguous = "drop-ambiguous"  # keep rows whose mapped labels agree on one class
