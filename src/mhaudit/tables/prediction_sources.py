"""Where prediction tables come from: paths, globs, DataFrames and Hugging Face `datasets.Dataset`s, each loaded
with its name, the stem of its file name, the rows' places and a fingerprint; and the fields (model, seed,
platform, data set) a name pattern reads from a file name. `prediction_files.read_predictions` reads them."""

from __future__ import annotations

import glob
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, read_table
from mhaudit.tables.predictions import sha256_file

GROUP = ("model", "seed", "platform", "dataset")  # also the fields a name pattern may name


@dataclass
class PredictionSource:
    """One source loaded: its rows with their places, and what names and fingerprints it."""

    name: str  # the path, or "DataFrame 1" for an in-memory table
    stem: str
    frame: pd.DataFrame  # with SOURCE_FILE and SOURCE_ROW
    fingerprint: str
    path: Path | None


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
        return PredictionSource(str(source), _stem(source), frame, sha256_file(source), source)
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
