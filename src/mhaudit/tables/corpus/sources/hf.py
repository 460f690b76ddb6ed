"""Hugging Face `datasets`: a hub id (with the internet) or a local file / folder that `load_dataset` reads.

Every split of a hub data set is loaded (a config as `<hub-id>:<config>`). A local file is read with the
matching packaged builder; a local folder with `load_dataset(folder)`, or `load_from_disk` if it was written
by `save_to_disk`. ClassLabel ids become their names (also inside lists: multi-label). Columns: --text-col
(`text`), --label-col (`label`, else `labels`), --id-col (defaults: docs/sources.md). Splits train /
validation (-> val) / test are kept; any other split name is treated as no official split.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import as_labels, as_text, is_absent, records, split_from_name
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, require_columns

BUILDERS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}
SPLITS = {"train": "train", "validation": "val", "valid": "val", "val": "val", "dev": "val", "test": "test"}


def _load(path: Path):
    try:
        import datasets
    except ImportError:
        raise InputError(
            "the hf source needs the `datasets` package; install mhaudit[hf] (pip install 'mhaudit[hf]')"
        ) from None
    name = str(path)
    try:
        if path.is_file():
            builder = BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise InputError(
                    f"cannot tell the format from '{path.suffix}'; expected one of {', '.join(BUILDERS)}", path=path
                )
            extra = {"delimiter": "\t"} if path.suffix.lower() == ".tsv" else {}
            found = split_from_name(path)
            split = {"val": "validation", None: "all"}.get(found, found)  # a split name datasets accepts
            return datasets.load_dataset(builder, data_files={split: name}, **extra)
        if path.suffix.lower() in BUILDERS:
            raise InputError("no such file", path=path)
        if path.is_dir() and any((path / f).is_file() for f in ("dataset_dict.json", "state.json")):
            return datasets.load_from_disk(name)
        if path.is_dir():
            return datasets.load_dataset(name)
        hub_id, _, config = name.partition(":")
        return datasets.load_dataset(hub_id, config or None)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds (network, hub, builder); report them all
        first = (str(exc).strip().splitlines() or [""])[0]
        raise InputError(
            f"load_dataset could not load it ({type(exc).__name__}: {first[:300]}); check the hub "
            "id and the internet connection, or give a local .csv/.jsonl/.parquet file",
            path=name,
        ) from None


def _names(feature):
    """A function turning label cells into names when `feature` is a ClassLabel (or a list of them)."""

    def name(label, v):  # -1 (or absent) is "no label" in HF data sets: left empty, later an input error
        return "" if is_absent(v) or int(v) < 0 else label.int2str(int(v))

    inner = getattr(feature, "feature", None)
    if hasattr(feature, "int2str"):
        return lambda v: name(feature, v)
    if hasattr(inner, "int2str"):
        return lambda v: [name(inner, x) for x in v]
    return lambda v: v


def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    if not options.platform:
        raise InputError("the hf source needs --platform (e.g. --platform reddit): hub data sets do not say it")
    parts = []
    for path in paths:
        loaded = _load(path)
        splits = loaded.items() if hasattr(loaded, "items") else [(path.stem, loaded)]
        stem = path.stem if path.exists() else str(path).partition(":")[0].rsplit("/", 1)[-1]
        dataset = options.dataset or stem
        for split_name, table in splits:
            frame, place = table.to_pandas(), f"{path}[{split_name}]"
            label_col = options.label_col or ("labels" if "label" not in frame and "labels" in frame else "label")
            text_col = options.text_col or "text"
            require_columns(frame, [text_col, label_col] + ([options.id_col] if options.id_col else []), place)
            frame[SOURCE_FILE], frame[SOURCE_ROW] = place, range(1, len(frame) + 1)
            labels = as_labels(frame[label_col].map(_names(table.features.get(label_col))))
            ids = (
                as_text(frame[options.id_col])
                if options.id_col
                else [f"{dataset}-{split_name}-{r}" for r in frame[SOURCE_ROW]]
            )
            parts.append(
                records(
                    frame,
                    ids=ids,
                    texts=as_text(frame[text_col]),
                    labels=labels,
                    dataset=dataset,
                    platform=options.platform,
                    label_source=options.label_source or "unknown",
                    split=SPLITS.get(str(split_name).lower()),
                )
            )
    return pd.concat(parts, ignore_index=True)


SOURCE = register(
    Source(
        "hf",
        "Hugging Face datasets: a hub id or a local file/folder load_dataset reads (needs mhaudit[hf] and --platform)",
        read,
    )
)
