"""A lexicon as a weak labeler: an item is positive when its text contains any lexicon term.

The weak labeler of the real-data check in docs/validation.md ("The lexicon weak labeler" lists its columns). Its
labeler name carries the first 12 hex digits of the lexicon file's SHA-256, so a changed lexicon is a different
labeler and can never be mixed up with the one that was validated.
"""

from __future__ import annotations

import json

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import COLUMNS, now
from mhaudit.weak_supervision.lexicons import Lexicon

__all__ = ["lexicon_labeler_name", "lexicon_labels"]


def lexicon_labeler_name(lexicon: Lexicon) -> str:
    """`lexicon:<name>@<sha256[:12]>`.

    >>> from mhaudit.weak_supervision.lexicons import Lexicon
    >>> lexicon_labeler_name(Lexicon("tiny", "1", {"low": ["depressed"]}, sha256="ab" * 32))
    'lexicon:tiny@abababababab'
    """
    digest = lexicon.sha256[:12] or "unhashed"
    return f"lexicon:{lexicon.name}@{digest}"


def lexicon_labels(items: pd.DataFrame, lexicon: Lexicon, task: str) -> pd.DataFrame:
    """One label per item: 1 if its text contains any term of `lexicon`, else 0.

    `items` needs `id` (or `item_id`) and `text` columns; ids must be unique.

    >>> from mhaudit.weak_supervision.lexicons import Lexicon
    >>> lex = Lexicon("tiny", "1", {"low": ["depressed", "can't sleep"]}, sha256="0" * 64)
    >>> items = pd.DataFrame({"id": ["a", "b", "c"], "text": ["So depressed today", "I cant sleep", "Can’t sleep"]})
    >>> lexicon_labels(items, lex, "mh")[["item_id", "labeler", "kind", "value", "raw_answer"]]
      item_id                    labeler     kind  value       raw_answer
    0       a  lexicon:tiny@000000000000  lexicon      1    ["depressed"]
    1       b  lexicon:tiny@000000000000  lexicon      0               []
    2       c  lexicon:tiny@000000000000  lexicon      1  ["can't sleep"]
    """
    id_col = "id" if "id" in items.columns else "item_id" if "item_id" in items.columns else None
    if id_col is None or "text" not in items.columns:
        raise InputError(
            f"items need an 'id' (or 'item_id') and a 'text' column; got {', '.join(map(str, items.columns))}"
        )
    if not task or not str(task).strip():
        raise InputError("the task name is empty")
    ids = items[id_col].astype(str)
    if ids.duplicated().any():
        raise InputError(f"item id '{ids[ids.duplicated()].iloc[0]}' appears twice; ids must be unique")
    name, created = lexicon_labeler_name(lexicon), now()
    rows = []
    for item_id, text in zip(ids, items["text"]):
        if not isinstance(text, str) or not text.strip():
            value, raw = None, None
        else:
            terms = list(dict.fromkeys(m.term for m in lexicon.match(text)))
            value, raw = int(bool(terms)), json.dumps(terms, ensure_ascii=False)
        rows.append(
            {
                "item_id": item_id,
                "task": task,
                "labeler": name,
                "kind": "lexicon",
                "value": value,
                "raw_answer": raw,
                "prompt_hash": lexicon.sha256 or None,
                "latency_ms": None,
                "tags": None,
                "note": None,
                "created_at": created,
            }
        )
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["value"] = frame["value"].astype("Int64")
    return frame
