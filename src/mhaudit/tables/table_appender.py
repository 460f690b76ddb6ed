"""One table written chunk by chunk, so that a long step (`mhaudit predict`) holds one chunk in memory, never the
table: Parquet through one `pyarrow.parquet.ParquetWriter` (a row group per chunk), CSV, TSV and JSONL appended,
each cell written as `tables.io.write_table` writes it. The chunks go to a temporary file beside the target,
renamed over it only when every chunk is written (`atomic_path`): an error or Ctrl-C leaves no half-written table.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mhaudit.tables.io import _cell, _json_value, atomic_path, table_format, text_cells

if TYPE_CHECKING:
    import pandas as pd


class TableAppender:
    """Appends frames of one set of columns to a temporary file (`appending_table` makes one). `metadata`: key-value
    pairs a Parquet file carries in its footer, set at any time before the end (CSV and JSONL carry none)."""

    def __init__(self, tmp: Path, kind: str) -> None:
        self.tmp, self.kind, self.rows = tmp, kind, 0
        self.metadata: dict[str, str] = {}
        self._writer: Any = None  # a ParquetWriter, or an open text file
        self._schema: Any = None
        self._empty: pd.DataFrame | None = None  # the first empty frame, written only when no rows come

    def write(self, frame: pd.DataFrame) -> None:
        """Append `frame` (its columns as the first frame's). An empty frame adds nothing, but fixes the columns of
        a table that gets no rows."""
        if frame.empty:
            if self._empty is None:
                self._empty = frame
            return
        first, self.rows = self._writer is None, self.rows + len(frame)
        if self.kind == "parquet":
            self._write_parquet(frame)
        elif self.kind == "jsonl":
            self._open_text().writelines(_json_lines(frame))
        else:
            text_cells(frame).to_csv(self._open_text(), index=False, header=first, sep=_SEP[self.kind])

    def _write_parquet(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            table = pa.Table.from_pandas(frame, preserve_index=False)
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self.tmp, self._schema)
        else:  # the first chunk's types: a later chunk's column is never guessed otherwise
            table = pa.Table.from_pandas(frame, schema=self._schema, preserve_index=False)
        self._writer.write_table(table)

    def _open_text(self) -> IO[str]:
        if self._writer is None:
            self._writer = open(self.tmp, "w", encoding="utf-8", newline="")
        return self._writer

    def finish(self) -> None:
        """Write what a table of no rows holds (its columns) and the Parquet footer's metadata, and close."""
        if self._writer is None and self._empty is not None:  # JSONL: no rows, an empty file
            if self.kind == "parquet":
                self._write_parquet(self._empty)
            elif self.kind != "jsonl":
                text_cells(self._empty).to_csv(self._open_text(), index=False, sep=_SEP[self.kind])
        if self.kind == "parquet" and self._writer is not None and self.metadata:
            self._writer.add_key_value_metadata(self.metadata)
        self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


_SEP = {"csv": ",", "tsv": "\t"}


@contextlib.contextmanager
def appending_table(path: str | os.PathLike, *, what: str = "the table") -> Iterator[TableAppender]:
    """A `TableAppender` on a temporary file beside `path` (Parquet, CSV, TSV or JSONL, by suffix), renamed over
    `path` when the block ends without an error; otherwise removed, and an earlier `path` kept as it was."""
    kind = table_format(path, what)
    with atomic_path(path) as tmp:
        appender = TableAppender(tmp, kind)
        try:
            yield appender
            appender.finish()
        finally:
            appender.close()


def _json_lines(frame: pd.DataFrame) -> Iterator[str]:
    columns = [str(c) for c in frame.columns]
    for row in frame.itertuples(index=False, name=None):
        record = {c: _cell(v) for c, v in zip(columns, row, strict=True)}
        yield json.dumps(record, ensure_ascii=False, default=_json_value) + "\n"
