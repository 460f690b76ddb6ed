"""`mhaudit explain`: the attributions table of a trained model on a corpus (docs/attributions.md)."""

from __future__ import annotations

import pandas as pd

from mhaudit.attribution import EXPLAIN_SAMPLE
from mhaudit.core.errors import InputError
from mhaudit.models.base import check_attribution_method, check_classes
from mhaudit.tables.corpus.schema import Corpus

ATTRIBUTION_COLUMNS = ["class", "word", "score", "count", "method"]


def explain_corpus(
    model,
    corpus: Corpus,
    method: str,
    *,
    n: int = EXPLAIN_SAMPLE,
    seed: int = 0,
    splits=("test",),
    model_name: str | None = None,
) -> pd.DataFrame:
    """The attributions table of a trained model (docs/attributions.md): at most `n` texts per (platform,
    data set) of `splits`, drawn with `seed` (pandas `sample`), attributed with `method` ('linear': the
    model's `explain`; 'saliency' or 'integrated_gradients' to each text's true label: `attribution_table`).
    Columns model (`model_name`, default the registry name), seed (the model's), platform, dataset, class,
    word, score, count, method; `attrs["texts"]` counts the texts attributed. A method the model does not
    support, or no rows in `splits`, is an InputError."""
    check_attribution_method(model, method)
    check_classes(model, corpus.classes)
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise InputError(f"the number of texts per platform must be a positive integer, got {n!r}")
    chosen = corpus.frame[corpus.frame["split"].isin(splits)]
    if chosen.empty:
        raise InputError(f"the corpus has no rows in split(s) {', '.join(splits)}; nothing to explain")
    tables, texts = [], 0
    for (platform, dataset), rows in chosen.groupby(["platform", "dataset"]):
        rows = rows.sample(n=min(int(n), len(rows)), random_state=seed)
        texts += len(rows)
        if method == "linear":
            table = model.explain(rows["text"].tolist())
        else:
            from mhaudit.attribution.table import attribution_table
            from mhaudit.core.threads import thread_budget

            with thread_budget(None):  # torch's gradients on the stage's threads (MHAUDIT_THREADS, else the cores)
                table = attribution_table(
                    model.hf_model,
                    model.tokenizer,
                    rows["text"].tolist(),
                    corpus.classes,
                    method=method,
                    labels=rows["label"].tolist(),
                    sample=len(rows),
                    seed=seed,
                    max_length=model.options.get("max_length", 64),
                )
        tables.append(
            table.assign(
                model=model_name or model.name,
                seed=int(model.options.get("seed", 0)),
                platform=platform,
                dataset=dataset,
            )
        )
    table = pd.concat(tables, ignore_index=True)[["model", "seed", "platform", "dataset", *ATTRIBUTION_COLUMNS]]
    table.attrs["texts"] = texts
    return table
