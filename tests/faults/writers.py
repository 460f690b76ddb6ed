"""The seven writers of the fault battery: how to make each one's inputs and an earlier good output, and the
command that writes over it (run under a fault by tests/faults/test_battery.py).

Every writer is driven the way a user drives it: a `mhaudit` command, except the post store, which only
`mhaudit collect bluesky` writes (it needs a relay), so its public API `PostStore.commit_batch` is called
instead (tests/faults/driver.py, `post-store`).
"""

from __future__ import annotations

import csv
import os
import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from typer.testing import CliRunner

from mhaudit.cli import app
from tests.faults.driver import fake_posts
from tests.faults.harness import truncate_copy

runner = CliRunner()
PART = (".part",)  # atomic writers leave at most their hidden temporary file when killed, never the final name

POSITIVE = [
    "i feel hopeless and sad",
    "cannot sleep again, everything is dark",
    "so tired of feeling empty",
    "nothing helps and i cannot stop crying",
]
NEGATIVE = [
    "great game last night",
    "a new recipe for pasta",
    "the weather is lovely today",
    "my cat knocked over a plant",
]


def cli(*args: object) -> None:
    """Run a mhaudit command in this process (setting up the earlier output); it must succeed."""
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output + str(result.exception)


def binary_csv(path: Path, n: int, seed: int) -> Path:
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for i in range(n):
            words = POSITIVE if i % 2 else NEGATIVE
            writer.writerow(
                [
                    f"{rng.choice(words)} ({seed}-{i}) " + " ".join(rng.choice(words) for _ in range(3)),
                    "yes" if i % 2 else "no",
                ]
            )
    return path


def label_sheet(path: Path, n: int, labeler: str) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "task", "labeler", "kind", "value", "note"])
        for i in range(n):
            writer.writerow([f"item-{i:05d}", "mh", labeler, "human", i % 2, f"note {i} " + "x" * 40])
    return path


def sqlite_content(path: Path, tables: tuple[str, ...]) -> dict[str, list]:
    """Every row of the tables, read through a fresh connection (which also recovers the WAL a killed writer
    left); the file must pass SQLite's integrity check."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        conn.close()


@dataclass
class Writer:
    """One writer: `prepare` makes inputs under `root` and the earlier output in `root/template`; `args` writes
    a different output over it; `corrupt` names a broken input and the command that reads it."""

    name: str
    guarantee: str
    pause: str = "rename"  # the kill -9 hook (tests/faults/driver.py)
    fsize: int = 4096  # RLIMIT_FSIZE for the full-disk case: below the size of what `args` writes
    # An SQLite store: (its file in the output folder, the tables the write must leave as they were), compared
    # row by row (a writer may commit bookkeeping of its own: the post store records each run before its batches).
    sqlite: tuple[str, tuple[str, ...]] | None = None
    inputs: dict = field(default_factory=dict)
    template: Path | None = None  # the earlier output, copied into each case's folder

    def prepare(self, root: Path) -> None:
        raise NotImplementedError

    def args(self, out: Path) -> list[str]:
        raise NotImplementedError

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        """(writer args whose input is broken, the file name the sentence must name)."""
        raise NotImplementedError

    def content(self, out: Path) -> dict[str, list] | None:
        return sqlite_content(out / self.sqlite[0], self.sqlite[1]) if self.sqlite else None


class CorpusImport(Writer):
    def prepare(self, root: Path) -> None:
        earlier = binary_csv(root / "earlier.csv", 40, seed=1)
        self.inputs["posts"] = binary_csv(root / "posts.csv", 400, seed=2)
        cli("data", "import", "generic", earlier, "--platform", "reddit", "--out", root / "template" / "corpus.parquet")
        parquet = root / "posts.parquet"
        cli("data", "import", "generic", self.inputs["posts"], "--platform", "reddit", "--out", parquet)
        self.inputs["parquet"] = parquet

    def args(self, out: Path) -> list[str]:
        return [
            "cli",
            "data",
            "import",
            "generic",
            str(self.inputs["posts"]),
            "--platform",
            "reddit",
            "--out",
            str(out / "corpus.parquet"),
        ]

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        bad = truncate_copy(self.inputs["parquet"], scratch / "cut-posts.parquet")
        return [
            "cli",
            "data",
            "import",
            "generic",
            str(bad),
            "--platform",
            "reddit",
            "--out",
            str(out / "corpus.parquet"),
        ], "cut-posts.parquet"


class Predictions(Writer):
    def prepare(self, root: Path) -> None:
        corpus = root / "corpus.parquet"
        cli("data", "simulate", "--out", corpus, "--n-per-platform", "60")
        cli(
            "train", "--corpus", corpus, "--model", "tfidf-lr", "--out", root / "model", "--platform", "synthetic-forum"
        )
        cli(
            "predict",
            "--model",
            root / "model",
            "--corpus",
            corpus,
            "--out",
            root / "template" / "predictions.parquet",
            "--splits",
            "test",
        )
        self.inputs.update(corpus=corpus, model=root / "model")

    def args(self, out: Path, corpus: Path | None = None) -> list[str]:
        return [
            "cli",
            "predict",
            "--model",
            str(self.inputs["model"]),
            "--corpus",
            str(corpus or self.inputs["corpus"]),
            "--out",
            str(out / "predictions.parquet"),
            "--splits",
            "train,val,test",
        ]

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        bad = truncate_copy(self.inputs["corpus"], scratch / "cut-corpus.parquet")
        return self.args(out, corpus=bad), "cut-corpus.parquet"


class Report(Writer):
    def prepare(self, root: Path) -> None:
        import pandas as pd

        from mhaudit.report import AuditResult, Section, verdict, write_report

        png = b"\x89PNG\r\n\x1a\n" + os.urandom(12_000)  # report.html embeds it: the one file over `fsize`
        table = pd.DataFrame({"model": ["m1", "m2"], "f1": [0.71, 0.64]})
        result = AuditResult(
            "An audit",
            [Section("Scores", "Two models.", {"scores": table}, {"F1 by model": png})],
            summary="Two models were scored.",
            verdicts=pd.DataFrame(
                [verdict("cpfe", "performance", "m1", "forum", "f1", 0.71, ">= 0.5", "pass", "good enough")]
            ),
        )
        write_report(result, root / "audit")
        cli("report", "combine", root / "audit", "--out", root / "template", "--title", "Earlier")
        self.inputs["audit"] = root / "audit"
        sizes = {p.name: p.stat().st_size for p in (root / "template").rglob("*") if p.is_file()}
        # The full-disk case fails on report.html, written last: the files before it must not be published.
        assert sizes.pop("report.html") > self.fsize > max(sizes.values()), sizes

    def args(self, out: Path, audit: Path | None = None) -> list[str]:
        return [
            "cli",
            "report",
            "combine",
            str(audit or self.inputs["audit"]),
            "--out",
            str(out),
            "--title",
            "A later title",
        ]

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        import shutil

        audit = shutil.copytree(self.inputs["audit"], scratch / "cut-audit")
        truncate_copy(self.inputs["audit"] / "report.json", audit / "report.json")
        return self.args(out, audit=audit), "report.json"


class LabelStoreImport(Writer):
    def prepare(self, root: Path) -> None:
        cli(
            "labels",
            "import",
            label_sheet(root / "earlier.csv", 20, "alice"),
            "--labels",
            root / "template" / "labels.sqlite",
        )
        self.inputs["sheet"] = label_sheet(root / "sheet.csv", 3000, "bob")
        cli("labels", "export", "--labels", root / "template" / "labels.sqlite", "--out", root / "sheet.parquet")
        self.inputs["parquet"] = root / "sheet.parquet"

    def args(self, out: Path, sheet: Path | None = None) -> list[str]:
        return ["cli", "labels", "import", str(sheet or self.inputs["sheet"]), "--labels", str(out / "labels.sqlite")]

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        return self.args(out, truncate_copy(self.inputs["parquet"], scratch / "cut-sheet.parquet")), "cut-sheet.parquet"


class PostStoreBatch(Writer):
    def prepare(self, root: Path) -> None:
        from mhaudit.weak_supervision.collect.store import PostStore

        (root / "template").mkdir()
        with PostStore(root / "template" / "posts.sqlite") as store:
            store.start_run("earlier")
            store.commit_batch(fake_posts(20), 100)

    def args(self, out: Path, store: Path | None = None) -> list[str]:
        return ["post-store", str(store or out / "posts.sqlite"), "3000", "200"]

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        # The post store's input is the store itself: a copy cut in half must be refused, not "repaired".
        store = out / "posts.sqlite"
        data = store.read_bytes()
        store.write_bytes(data[: len(data) // 2])
        return self.args(out), "posts.sqlite"


class AnnotationSession(Writer):
    def prepare(self, root: Path) -> None:
        from mhaudit.weak_supervision.annotate import open_session

        sample = root / "sample.csv"
        with open(sample, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["item_id", "task", "text"])
            for i in range(12):
                writer.writerow([f"s{i}", "mh", f"sample text {i}: {POSITIVE[i % 4]}"])
        (root / "template").mkdir()
        session = open_session(sample, root / "template" / "labels.sqlite", ["alice", "bob"], port=0)
        try:
            session.store.add(
                [
                    {"item_id": f"s{i}", "task": "mh", "labeler": "alice", "kind": "human", "value": i % 2}
                    for i in range(6)
                ]
            )
        finally:
            session.close()
        self.inputs.update(sample=sample)

    def args(self, out: Path, sample: Path | None = None) -> list[str]:
        return [
            "cli",
            "annotate",
            "--sample",
            str(sample or self.inputs["sample"]),
            "--labels",
            str(out / "labels.sqlite"),
            "--annotator",
            "alice",
            "--annotator",
            "bob",
            "--new-tokens",
            "--port",
            "0",
        ]

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        import pandas as pd

        sample = scratch / "sample.parquet"
        pd.read_csv(self.inputs["sample"]).to_parquet(sample)
        return self.args(out, truncate_copy(sample, scratch / "cut-sample.parquet")), "cut-sample.parquet"


class BenchmarkCache(Writer):
    def prepare(self, root: Path) -> None:
        corpus = root / "corpus.parquet"
        cli(
            "data",
            "import",
            "generic",
            binary_csv(root / "bench.csv", 60, seed=3),
            "--platform",
            "reddit",
            "--out",
            corpus,
        )
        cli(*self.args(root / "template", corpus)[1:])
        self.inputs["corpus"] = corpus

    def args(self, out: Path, corpus: Path | None = None) -> list[str]:
        # --no-resume: the finished fold job is trained again and its cache entry written over
        return [
            "cli",
            "audit",
            "model-selection",
            "--corpus",
            str(corpus or self.inputs["corpus"]),
            "--model",
            "tfidf-lr",
            "--protocol",
            "holdout",
            "--out",
            str(out),
            "--no-resume",
        ]

    def corrupt(self, out: Path, scratch: Path) -> tuple[list[str], str]:
        bad = truncate_copy(self.inputs["corpus"], scratch / "cut-corpus.parquet")
        return self.args(out, bad), "cut-corpus.parquet"


WRITERS = [
    CorpusImport(
        "corpus",
        "atomic rename: the Parquet file is written to a hidden temporary name beside it, "
        "then renamed over the final name",
    ),
    Predictions("predictions", "atomic rename (mhaudit.tables.io.write_table)"),
    Report(
        "report",
        "every file (figures, tables, report.json/.md/.html) written to its temporary name first, "
        "then all renamed: a failed write publishes none of them",
        fsize=15_000,
    ),
    LabelStoreImport(
        "label-store",
        "one SQLite transaction per import (WAL): all rows or none",
        pause="sqlite:200",
        fsize=32_768,
        sqlite=("labels.sqlite", ("labels",)),
    ),
    PostStoreBatch(
        "post-store",
        "one SQLite transaction per batch, posts and cursor together (WAL)",
        pause="sqlite:200",
        fsize=32_768,
        sqlite=("posts.sqlite", ("posts", "cursor")),
    ),
    AnnotationSession(
        "annotation-store",
        "answers: one SQLite transaction each (the label store); the token file: atomic rename, mode 0600",
        fsize=300,
        sqlite=("labels.sqlite", ("labels",)),
    ),
    BenchmarkCache(
        "benchmark-cache",
        "one JSON file per finished fold job (OUT/jobs/KEY.json), atomic rename; a "
        "damaged entry is trained again and written over",
        fsize=256,
    ),
]
