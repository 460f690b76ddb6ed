"""A corpus Parquet file read in chunks of rows, each checked as `Corpus.read` checks the whole file, so that a
step that reads the corpus row by row (`mhaudit predict`) holds one chunk in memory, never the corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.schema import METADATA_KEY, SCHEMA, unreadable_corpus
from mhaudit.tables.io import SOURCE_ROW

CHUNK_ROWS = 4096  # a few thousand texts: the model's batches stay full, the memory small


@dataclass(frozen=True)
class CorpusChunks:
    """A corpus file's classes, meta and row count, read from its footer and label column; iterating gives its
    rows in file order as validated frames of at most `chunk_rows` rows (the columns the corpus schema requires)."""

    path: Path
    classes: list[str]
    meta: dict
    rows: int
    chunk_rows: int = CHUNK_ROWS

    @classmethod
    def open(cls, path: str | Path, chunk_rows: int = CHUNK_ROWS) -> CorpusChunks:
        """The corpus at `path`; a missing or unreadable file, or an empty corpus, is an InputError (as
        `Corpus.read`'s)."""
        path = Path(path)
        if not path.exists():
            raise InputError("no such file; expected a corpus Parquet file (mhaudit data import --out ...)", path=path)
        if chunk_rows < 1:
            raise InputError(f"chunks of {chunk_rows} rows: a chunk needs at least one row")
        try:
            footer = pq.read_metadata(path)
            info = json.loads((footer.metadata or {}).get(METADATA_KEY, b"{}"))
            classes = info.pop("classes", None)
            if classes is None and "label" in footer.schema.to_arrow_schema().names:  # as Corpus.build: no mapping,
                labels = pq.read_table(path, columns=["label"]).column("label").to_pandas()  # the labels sorted
                classes = sorted(labels.dropna().astype(str).unique())
        except (pa.ArrowInvalid, OSError) as exc:
            raise unreadable_corpus(path, exc) from None
        if footer.num_rows == 0:
            raise InputError("the corpus is empty: no rows to work with", path=path)
        return cls(path, list(classes or []), info, footer.num_rows, chunk_rows)

    def __iter__(self) -> Iterator[pd.DataFrame]:
        file = pq.ParquetFile(self.path)
        names = file.schema_arrow.names
        columns = [c for c in SCHEMA.required if c in names]
        # the ids so far as sorted 64-bit hashes, 8 bytes a row (a false repeat needs a collision: ~3e-8 at 1M rows)
        seen = np.empty(0, np.uint64)
        start = 0
        for batch in file.iter_batches(batch_size=self.chunk_rows, columns=columns):
            frame = batch.to_pandas()
            frame[SOURCE_ROW] = np.arange(start + 1, start + len(frame) + 1)
            chunk = SCHEMA.validate(frame, classes=self.classes, path=self.path)  # ids unique within the chunk
            ids = pd.util.hash_array(chunk["id"].astype(str).to_numpy(dtype=object))
            at = np.minimum(np.searchsorted(seen, ids), max(len(seen) - 1, 0))
            if len(seen) and (repeated := seen[at] == ids).any():
                i = int(np.argmax(repeated))
                key = str(chunk["id"].iat[i])
                raise InputError(
                    f"id '{key}' appears more than once (first on row {self._first_row(key)}); ids must be unique",
                    path=f"{self.path}: row {start + i + 1}",
                )
            seen = np.sort(np.concatenate([seen, ids]), kind="stable")  # a merge of two sorted runs: linear
            start += len(frame)
            del batch, frame
            pa.default_memory_pool().release_unused()  # else mimalloc keeps about a MiB a chunk (measured)
            yield chunk

    def _first_row(self, key: str) -> int:
        """The first row holding id `key` (for the message about a repeated id), read a chunk of ids at a time."""
        start = 0
        for batch in pq.ParquetFile(self.path).iter_batches(batch_size=self.chunk_rows, columns=["id"]):
            ids = batch.column("id").to_pandas().astype(str).to_numpy()
            if (found := np.flatnonzero(ids == key)).size:
                return start + int(found[0]) + 1
            start += batch.num_rows
        return start
