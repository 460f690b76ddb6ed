"""Training and prediction steps shared by the CLI and the experiment runner.

Multi-seed training writes one model folder per seed (`seed-<s>/`); a folder with a manifest is a
finished seed and is not retrained. Prediction over several seed folders gives one predictions table.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.models import create, load_model, save_model
from mhaudit.models.base import MODEL_FILE
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.predictions import predict_corpus

DEFAULT_SEEDS = (42, 0, 1, 7, 123)  # the CPFE paper's seeds


def training_rows(corpus: Corpus, platform: str) -> pd.DataFrame:
    """Rows of `platform` (or of a data set of that name) in splits train and val."""
    frame = corpus.frame
    home = frame[(frame["platform"] == platform) | (frame["dataset"] == platform)]
    if home.empty:
        raise InputError(f"the corpus has no platform or data set '{platform}'; it has "
                         f"{', '.join(sorted(set(frame['platform']) | set(frame['dataset'])))}")
    rows = home[home["split"].isin(["train", "val"])]
    if not (rows["split"] == "train").any():
        raise InputError(f"platform '{platform}' has no rows in split 'train'")
    return rows


def train_seeds(corpus: Corpus, platform: str, model_name: str, seeds, out: Path, options: dict | None = None,
                log=print) -> list[Path]:
    """Train one model per seed into out/seed-<s>/; finished seeds are kept, not retrained."""
    rows = training_rows(corpus, platform)
    folders = []
    for seed in seeds:
        folder = Path(out) / f"seed-{seed}"
        if (folder / MODEL_FILE).exists():
            log(f"seed {seed}: already trained in {folder}, kept")
        else:
            model = create(model_name, **{**(options or {}), "seed": seed}).fit(rows, corpus.classes)
            save_model(model, folder)
            log(f"seed {seed}: trained on {len(rows)} rows of {platform}, saved to {folder}")
        folders.append(folder)
    return folders


def model_folders(path: Path) -> list[Path]:
    """A model folder, or a folder of seed-* model folders."""
    path = Path(path)
    if (path / MODEL_FILE).exists():
        return [path]
    found = sorted(p for p in path.glob("seed-*") if (p / MODEL_FILE).exists())
    if not found:
        raise InputError("holds no trained model (no mhaudit-model.json here or in seed-*/)", path=path)
    return found


def predict_folders(folders: list[Path], corpus: Corpus, splits=("test", "calibration"),
                    name: str | None = None) -> pd.DataFrame:
    tables = []
    for folder in folders:
        model = load_model(folder)
        if model.classes != corpus.classes:
            raise InputError(f"the model's classes {model.classes} differ from the corpus's {corpus.classes}",
                             path=folder)
        tables.append(predict_corpus(model, corpus, model_name=name or model.name,
                                     seed=int(model.options.get("seed", 0)), splits=splits))
    return pd.concat(tables, ignore_index=True)
