"""Where prediction tables come from: paths, globs, DataFrames and Hugging Face `datasets.Dataset`s, each loaded
with its name, the stem of its file name, the rows' places and a fingerprint; and the fields (model, seed,
platform, data set) a name pattern reads from a file name. `prediction_files.read_predictions` reads them."""

from __future__ import annotations

import glob
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, read_table, table_format
from mhaudit.tables.predictions import MODELS_KEY, sha256_file

GROUP = ("model", "seed", "platform", "dataset")  # also the fields a name pattern may name


@dataclass
class PredictionSource:
    """One source loaded: its rows with their places, and what names and fingerprints it."""

    name: str  # the path, or "DataFrame 1" for an in-memory table
    stem: str
    frame: pd.DataFrame  # with SOURCE_FILE and SOURCE_ROW
    fingerprint: str
    path: Path | None
    models: list[dict] = field(default_factory=list)  # the scored models a Parquet footer names (MODELS_KEY)


def expand_sources(sources) -> list:
    """Paths with their globs expanded (sorted; a file whose name only looks like a glob is taken as it is),
    DataFrames and Datasets as they are; a glob matching nothing is an error."""
    if isinstance(sources, (str, Path, pd.DataFrame)) or hasattr(sources, "to_pandas"):
        sources = [sources]
    out = []
    for source in sources:
        if isinstance(source, (str, Path)) and glob.has_magic(str(source)) and not Path(source).exists():
            matched = sorted(glob.glob(str(source)))
            if not matched:
                raise InputError(f"the glob '{source}' matches no file")
            out += [Path(m) for m in matched]
        else:
            out.append(Path(source) if isinstance(source, str) else source)
    if not out:
        raise InputError("no prediction files given")
    return out


def load_source(source, number: int, label: str | None) -> PredictionSource:
    """The `number`-th source (a path, a DataFrame or a Dataset) loaded; `label`: a column it must have."""
    if isinstance(source, Path):
        frame = read_table(source, required=[label] if label else [], place=True)
        return PredictionSource(str(source), _stem(source), frame, sha256_file(source), source, scored_models(source))
    if hasattr(source, "to_pandas"):  # a Hugging Face datasets.Dataset
        source = source.to_pandas()
    if not isinstance(source, pd.DataFrame):
        raise InputError(
            f"prediction source {number} is a {type(source).__name__}; expected a path, a glob, "
            "a pandas DataFrame or a datasets.Dataset"
        )
    name = f"DataFrame {number}"
    frame = source.reset_index(drop=True).copy()
    if label and label not in frame.columns:
        raise InputError(f"{name} has no '{label}' column; expected one true label per row")
    frame[SOURCE_FILE], frame[SOURCE_ROW] = name, np.arange(1, len(frame) + 1)
    digest = hashlib.sha256(pd.util.hash_pandas_object(source, index=False).to_numpy().tobytes()).hexdigest()
    return PredictionSource(name, name, frame, digest, None)


def scored_models(path: Path) -> list[dict]:
    """The models that `mhaudit predict` names in a Parquet file's footer: name, seed, source and sha256 each
    (empty for another file); a footer that is not that list is an InputError."""
    if table_format(path) != "parquet":
        return []
    import pyarrow.parquet as pq

    text = (pq.read_metadata(path).metadata or {}).get(MODELS_KEY.encode())
    if text is None:
        return []
    try:
        models = json.loads(text)
        return [{key: model[key] for key in ("model", "seed", "source", "sha256")} for model in models]
    except (ValueError, TypeError, KeyError):
        raise InputError(
            f"the footer's '{MODELS_KEY}' is not a list of models with model, seed, source and sha256", path=path
        ) from None


def model_input(model: dict) -> str:
    """A scored model as a report's inputs name it, beside its sha256: "model tfidf-lr seed 0, mhaudit"."""
    return f"model {model['model']} seed {model['seed']}, {model['source']}"


def _stem(path: Path) -> str:
    """The file name without its table suffix(es): bert_reddit_seed42_predictions.csv.gz -> ..._predictions."""
    name = path.name
    for suffix in (".gz", ".bz2", ".zip", ".xz"):
        name = name.removesuffix(suffix)
    return name.rsplit(".", 1)[0] if "." in name else name


def name_regex(pattern: str) -> re.Pattern:
    """A name pattern such as "{model}_{platform}_seed{seed}_predictions" as a regular expression."""
    fields = re.findall(r"{(\w*)}", pattern)
    unknown = [f for f in fields if f not in GROUP]
    if unknown or not fields or len(set(fields)) != len(fields):
        raise InputError(
            f"--name-pattern '{pattern}' must name each of its fields once, from "
            f"{{{'}, {'.join(GROUP)}}}" + (f"; '{unknown[0]}' is not one" if unknown else "")
        )
    regex = "".join(
        f"(?P<{p[1:-1]}>\\d+)" if p == "{seed}" else f"(?P<{p[1:-1]}>.+?)" if p.startswith("{") else re.escape(p)
        for p in re.split(r"({\w+})", pattern)
    )
    return re.compile(f"^{regex}$")


def fields_from_name(source: PredictionSource, regex: re.Pattern | None, pattern: str | None) -> dict:
    if regex is None or source.path is None:
        return {}
    match = regex.match(source.stem)
    if match is None:
        raise InputError(f"the file name '{source.stem}' does not match --name-pattern '{pattern}'", path=source.path)
    return match.groupdict()
