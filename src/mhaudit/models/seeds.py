"""Training and prediction steps shared by the CLI and the experiment runner.

Multi-seed training writes one model folder per seed (`seed-<s>/`); a folder with a manifest is a
finished seed and is not retrained. Prediction over several seed folders gives one predictions table, written
chunk by chunk.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.models import create, load_model, save_model, training_seeds
from mhaudit.models.base import MODEL_FILE, check_classes
from mhaudit.tables.corpus.chunks import CHUNK_ROWS, CorpusChunks
from mhaudit.tables.corpus.names import check_place
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.predictions import MODELS_KEY, predict_corpus, predict_rows
from mhaudit.tables.table_appender import appending_table
from mhaudit.weak_supervision.collect.scoring import model_digest

DEFAULT_SEEDS = (42, 0, 1, 7, 123)  # the CPFE paper's seeds


def training_rows(corpus: Corpus, platform: str) -> pd.DataFrame:
    """Rows of `platform` (or of a data set of that name) in splits train and val."""
    frame = corpus.frame
    check_place(platform, frame["platform"], frame["dataset"], what="platform to train on", where="in the corpus")
    home = frame[(frame["platform"] == platform) | (frame["dataset"] == platform)]
    rows = home[home["split"].isin(["train", "val"])]
    if not (rows["split"] == "train").any():
        raise InputError(f"platform '{platform}' has no rows in split 'train'")
    return rows


def default_platform(corpus: Corpus) -> str:
    """The platform to train on when none is named: the only platform with training rows, else the only data
    set with training rows; several is an InputError naming the platforms."""
    train = corpus.frame[corpus.frame["split"] == "train"]
    if train.empty:
        raise InputError("the corpus has no rows in split 'train'; there is nothing to train on")
    for column in ("platform", "dataset"):
        if train[column].nunique() == 1:
            return str(train[column].iat[0])
    names = sorted(train["platform"].unique())
    raise InputError(
        f"the corpus has training rows on {len(names)} platforms ({', '.join(names)}); "
        "name the one to train on (--platform)"
    )


def train_platform(
    corpus: Corpus,
    platform: str | None,
    model_name: str,
    seeds,
    out: Path,
    options: dict | None = None,
    progress: Progress | None = None,
) -> list[Path]:
    """`mhaudit train`: fit `model_name` on the train rows of `platform` (None: `default_platform`), its val
    rows given to the model too (early stopping, temperature), one folder out/seed-<s>/ per seed; a
    deterministic model once, for the first seed. Finished seeds are kept. Each seed is a stage of `progress`;
    its rows and speed are a note."""
    progress = ensure(progress)
    platform = platform or default_platform(corpus)
    rows = training_rows(corpus, platform)
    n_train = int((rows["split"] == "train").sum())
    seeds, note = training_seeds(model_name, seeds)
    if note:
        progress.note(note)
    folders = [Path(out) / f"seed-{seed}" for seed in seeds]
    for seed, folder in zip(seeds, folders, strict=True):
        if (folder / MODEL_FILE).exists():
            progress.note(f"{model_name} seed {seed}: already trained in {folder}, kept")
            continue
        start = time.perf_counter()
        with progress.stage(f"train {model_name} seed {seed} on {platform}"):
            model = create(model_name, **{**(options or {}), "seed": seed})
            model.fit(rows, corpus.classes, progress=progress)
        seconds = time.perf_counter() - start
        save_model(model, folder, trained_on=platform)
        progress.note(
            f"{model_name} seed {seed}: trained on {n_train:,} rows of {platform} ({len(rows) - n_train:,} "
            f"validation rows for early stopping/temperature) in {seconds:.2f} s, "
            f"{n_train / max(seconds, 1e-9):,.0f} training rows/s; saved to {folder}"
        )
    return folders


def subsample_training(rows: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """`rows` with only `n` of its split-train rows, drawn with `seed` and stratified by label (each class keeps
    its share, rounded by largest remainder, so exactly `n` are kept); every val row is kept."""
    train = rows["split"] == "train"
    if n >= train.sum():
        return rows
    quota = rows.loc[train, "label"].value_counts().sort_index() * n / train.sum()
    take = quota.astype(int)
    take[(quota - take).sort_values(ascending=False, kind="mergesort").index[: n - take.sum()]] += 1
    picked = [
        i
        for label, group in rows[train].groupby("label")
        for i in group.sample(n=int(take[label]), random_state=seed).index
    ]
    return rows[~train | rows.index.isin(picked)]


def model_folders(path: Path) -> list[Path]:
    """A model folder, or a folder of seed-* and run-* model folders (runs in run order: run-2 before run-10); an
    outside model (a Hugging Face folder or Hub id, a skops pipeline file) is one model; a Hub id stays an id, which
    `load_model` resolves (models.hf_hub: a local path always wins)."""
    from mhaudit.models.hf_hub import hub_model_id

    path = Path(path)
    if (path / MODEL_FILE).exists() or hub_model_id(path) or _outside_model(path):
        return [path]
    seeds = sorted(p for p in path.glob("seed-*") if (p / MODEL_FILE).exists())
    runs = sorted(
        (p for p in path.glob("run-*") if (p / MODEL_FILE).exists()),
        key=lambda p: (not p.name[4:].isdigit(), int(p.name[4:]) if p.name[4:].isdigit() else 0, p.name),
    )
    if not seeds + runs:
        raise InputError("holds no trained model (no mhaudit-model.json here or in seed-*/ or run-*/)", path=path)
    return seeds + runs


def _outside_model(path: Path) -> bool:
    """A skops pipeline file or a Hugging Face folder (imported only here: the latter loads torch)."""
    from mhaudit.models.skops_pipeline import is_pipeline_file

    if is_pipeline_file(path):
        return True
    if not (path / "config.json").is_file():
        return False
    from mhaudit.models.hf_folder import is_hf_folder

    return is_hf_folder(path)


@dataclass(frozen=True)
class Scored:
    """What `predict_to_file` wrote: its rows, and each model's provenance (`model_provenance`), in folder order."""

    rows: int
    models: list[dict]


def predict_to_file(
    folders: list[Path],
    corpus: str | Path,
    out: str | Path,
    splits: tuple[str, ...] | None = None,
    name: str | None = None,
    *,
    chunk_rows: int = CHUNK_ROWS,
    progress: Progress | None = None,
    **loading,
) -> Scored:
    """`mhaudit predict`: every model folder's scores on the rows of the corpus file `corpus` in `splits` (None: the
    rows it did not train on), its seed (a run's: base + k) in the `seed` column, written to `out` (Parquet, CSV,
    TSV or JSONL) chunk by chunk as they are made: the corpus is read `chunk_rows` rows at a time, so memory holds
    one chunk and one model, whatever the corpus's size. The table is `predict_corpus`'s tables one after the other;
    a Parquet file names each model's source and SHA-256 in its footer (`MODELS_KEY`). Written to a temporary file
    renamed at the end: on an error nothing is written. Two folders of one model with one seed are an InputError
    (their groups would merge). `loading`: `load_model`'s mapping and trust_pickle, for outside models."""
    progress = ensure(progress)
    chunks, seen, models = CorpusChunks.open(corpus, chunk_rows), dict[tuple[str, int], Path](), list[dict]()
    with appending_table(out, what="the predictions") as table:
        for folder in folders:
            model = load_model(folder, **loading)
            key = _run_key(model, folder, chunks.classes, name, seen)
            with progress.stage(f"predict {key[0]} seed {key[1]}", total=chunks.rows):
                for chunk in chunks:
                    table.write(
                        predict_rows(model, chunk, chunks.classes, model_name=key[0], seed=key[1], splits=splits)
                    )
                    progress.advance(len(chunk))
            models.append(model_provenance(model, folder, *key))
            table.metadata[MODELS_KEY] = json.dumps(models)
    return Scored(table.rows, models)


def predict_folders(
    folders: list[Path],
    corpus: Corpus,
    splits: tuple[str, ...] | None = None,
    name: str | None = None,
    **loading,
) -> pd.DataFrame:
    """`predict_to_file`'s table made in memory, from a corpus in memory."""
    tables, seen = [], dict[tuple[str, int], Path]()
    for folder in folders:
        model = load_model(folder, **loading)
        key = _run_key(model, folder, corpus.classes, name, seen)
        tables.append(predict_corpus(model, corpus, model_name=key[0], seed=key[1], splits=splits))
    return pd.concat(tables, ignore_index=True)


def _run_key(model, folder: Path, classes: list[str], name: str | None, seen: dict[tuple[str, int], Path]):
    """The (model name, seed) of `model`'s rows, checked: its classes are the corpus's, no earlier folder had it."""
    check_classes(model, classes, path=folder)
    key = (name or model.name, int(model.options.get("seed", 0)))
    if key in seen:
        raise InputError(
            f"{seen[key]} and {folder} both hold {key[0]} seed {key[1]}; their predictions would "
            "be one group, so score them separately"
        )
    seen[key] = folder
    return key


def model_provenance(model, folder: Path, name: str, seed: int) -> dict:
    """What names a scored model in the predictions and the reports: its name and seed in the table, its source
    (mhaudit, huggingface, skops or pickle) and the SHA-256 of its files (`model_digest`)."""
    digest = getattr(model, "digest", None) or model_digest(folder)
    return {"model": name, "seed": seed, "source": getattr(model, "source", "mhaudit"), "sha256": digest}
