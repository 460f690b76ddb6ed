"""The certification sample (`mhaudit labels sample --strategy estimate`, and the monitor's suggested sample): the
posts people should label to certify a model on a target.

The validation set has the columns of the weak-label sample (`tables.validation_set.SAMPLE_COLUMNS`;
`stratum` is the stratum's name, `weight` = N_h / n_h) plus `strategy`, `model` and `predictions_digest`;
beside it, `<name>.design.parquet` keeps the design for every pooled item (docs/certify.md, "The sample").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import read_table, write_table
from mhaudit.tables.sample_design import Pool, allocate, bins_for, confidence_strata
from mhaudit.tables.validation_set import SAMPLE_COLUMNS, item_texts

__all__ = ["STRATEGY", "certification_sample", "design_path", "write_certification_sample", "read_design"]

STRATEGY = "estimate"
EXTRA_COLUMNS = ("strategy", "model", "predictions_digest")


def design_path(sample_path: str | Path) -> Path:
    path = Path(sample_path)
    return path.with_name(f"{path.with_suffix('').name}.design.parquet")


def certification_sample(
    pool: Pool,
    items: pd.DataFrame | None,
    task: str,
    budget: int,
    *,
    seed: int = 0,
    max_bins: int = 4,
    labelled: set[str] | frozenset = frozenset(),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(validation set, design) for `budget` human labels. `labelled`: ids people already labelled for the
    task; they leave the pool (the estimate then covers the posts not yet labelled). `items` None: a sample
    of post ids without text (the monitor's), whose text the annotation app reads from the post store."""
    texts = None if items is None else item_texts(items, "id" if "id" in items.columns else "item_id")
    missing = [] if texts is None else [i for i in pool.ids if i not in texts.index]
    if missing:
        raise InputError(
            f"{len(missing)} of the {len(pool.ids):,} scored items have no text in the items table "
            f"(e.g. '{missing[0]}'); the annotators need every pooled item's text"
        )
    keep = ~np.isin(pool.ids, list(labelled))
    if budget < 1:
        raise InputError(f"the budget must be at least 1 label, got {budget}")
    if budget > len(pool.ids):
        raise InputError(f"a budget of {budget} is larger than the pool: the model scored {len(pool.ids):,} items")
    if budget > keep.sum():
        raise InputError(
            f"a budget of {budget} is larger than the unlabelled set: {int(keep.sum()):,} of the "
            f"{len(pool.ids):,} pooled items have no human label for task '{task}' yet"
        )
    if not keep.all():
        pool = replace(pool, ids=pool.ids[keep], pred=pool.pred[keep], probs=pool.probs[keep])
    strata, names = confidence_strata(
        pool.probs,
        pool.pred,
        pool.classes,
        bins_for(budget, len(pool.classes), max_bins),
        "ensemble" if len(pool.runs) > 1 else "model",
    )
    alloc = allocate(pool.probs, pool.pred, strata, budget)
    sizes = np.bincount(strata, minlength=len(names))
    rng = np.random.default_rng(seed)
    chosen = []
    for h, n_h in enumerate(alloc):
        ids = np.sort(pool.ids[strata == h])  # sorted first: the input order does not matter
        chosen.append(
            pd.DataFrame(
                {
                    "item_id": rng.choice(ids, size=int(n_h), replace=False),
                    "stratum": names[h],
                    "pool_size": int(sizes[h]),
                    "sample_size": int(n_h),
                }
            )
        )
    frame = pd.concat(chosen, ignore_index=True)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)  # position reveals no stratum
    width = max(4, len(str(len(frame))))
    frame = frame.assign(
        sample_id=[f"{task}-{seed}-{i + 1:0{width}d}" for i in range(len(frame))],
        task=task,
        text=texts.reindex(frame["item_id"]).to_numpy() if texts is not None else None,
        weak_labeler="",  # stratified by the model's scores, not by a weak labeler
        weight=frame["pool_size"] / frame["sample_size"],
        seed=seed,
        strategy=STRATEGY,
        model=pool.model,
        predictions_digest=pool.digest,
    )
    columns = [c for c in (*SAMPLE_COLUMNS, *EXTRA_COLUMNS) if texts is not None or c != "text"]
    return frame.loc[:, columns], _design_table(pool, strata, names)


def _design_table(pool: Pool, strata: np.ndarray, names: list[str]) -> pd.DataFrame:
    """The design of every pooled item: its stratum, predicted class and posteriors, and the model, predictions,
    calibration and runs they came from."""
    rows = np.lexsort((pool.ids, strata))  # by stratum (predicted class, then confidence), then id
    design = pd.DataFrame(
        {
            "item_id": pool.ids[rows],
            "stratum": [names[h] for h in strata[rows]],
            "predicted": [pool.classes[c] for c in pool.pred[rows]],
        }
    )
    for c, name in enumerate(pool.classes):
        design[f"posterior_{name}"] = pool.probs[rows, c]
    design["model"], design["predictions_digest"], design["calibration"] = pool.model, pool.digest, pool.calibration
    design["certified_seed"], design["runs"], design["predictor"] = pool.seed, max(1, len(pool.runs)), pool.predictor
    return design


def write_certification_sample(sample: pd.DataFrame, design: pd.DataFrame, path: str | Path) -> tuple[Path, Path]:
    """The design first, then the sample (each written atomically): a sample never exists without its design."""
    design_file = write_table(design, design_path(path), what="the sampling design")
    return write_table(sample, path, what="the validation set"), design_file


def read_design(sample_path: str | Path) -> pd.DataFrame:
    path = design_path(sample_path)
    if not path.exists():
        raise InputError(
            f"no sampling design beside the sample (expected {path}); `mhaudit labels sample "
            "--strategy estimate` writes it",
            path=sample_path,
        )
    return read_table(path, what="the sampling design")
