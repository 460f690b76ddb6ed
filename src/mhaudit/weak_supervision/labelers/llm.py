"""LLM weak labels: ask a local LLM server for 1 or 0 per item and write each answer to the labels table.

The run (`label_items`) and its report (`RunReport`); the servers are in `llm_backends` (retries and errors in
`llm_retry`, answer parsing in `llm_answers`), the items and the k-shot pool in `llm_items`.

Resume: `label_items` writes each answered item at once (one transaction per item) with kind 'llm',
labeler (default: the model name), prompt hash, raw answer and latency; a re-run skips every item that
already has a label for that task and labeler, so an interrupted run (Ctrl-C, kill -9) loses only the
requests in flight.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.weak_supervision.labelers.llm_answers import Answer
from mhaudit.weak_supervision.labelers.llm_backends import Backend
from mhaudit.weak_supervision.labelers.llm_retry import RequestFailed, ServerRejected, ServerUnreachable, brief
from mhaudit.weak_supervision.labelers.prompts import Example, Prompt


@dataclass
class RunReport:
    task: str
    labeler: str
    prompt_hash: str
    backend: str
    url: str
    constrain: str
    shots: int
    n_items: int = 0
    n_skipped: int = 0  # labelled before this run
    n_todo: int = 0
    n_answered: int = 0
    n_invalid: int = 0
    n_positive: int = 0
    n_failed: int = 0
    n_retried: int = 0
    wall_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    stop_reason: str | None = None  # a fatal error ended the run: its class and HTTP status (`brief`)
    stored_total: int = 0
    stored_valid: int = 0
    stored_positive: int = 0

    @property
    def items_per_s(self) -> float:
        return self.n_answered / self.wall_s if self.wall_s > 0 else float("nan")

    @property
    def invalid_rate(self) -> float:
        return self.n_invalid / self.n_answered if self.n_answered else float("nan")

    @property
    def positive_rate(self) -> float:
        valid = self.n_answered - self.n_invalid
        return self.n_positive / valid if valid else float("nan")

    def latency(self, q: float) -> float:
        return float(np.percentile(self.latencies_ms, q)) if self.latencies_ms else float("nan")

    def rows(self) -> list[dict]:
        """The report as (metric, value) rows: this run, then the task's labels in the store."""
        stored_rate = self.stored_positive / self.stored_valid if self.stored_valid else float("nan")
        return [
            {"metric": "items in input", "value": self.n_items},
            {"metric": "already labelled (skipped)", "value": self.n_skipped},
            {"metric": "answered this run", "value": self.n_answered},
            {"metric": "failed (not stored; retried next run)", "value": self.n_failed},
            {"metric": "items/s", "value": round(self.items_per_s, 2)},
            {"metric": "invalid rate", "value": round(self.invalid_rate, 4)},
            {"metric": "positive rate (valid answers, this run)", "value": round(self.positive_rate, 4)},
            {"metric": "latency p50 ms", "value": round(self.latency(50), 1)},
            {"metric": "latency p90 ms", "value": round(self.latency(90), 1)},
            {"metric": "latency p99 ms", "value": round(self.latency(99), 1)},
            {"metric": "requests retried", "value": self.n_retried},
            {"metric": f"labels stored for task '{self.task}' by '{self.labeler}'", "value": self.stored_total},
            {"metric": f"positive rate of stored valid labels ({self.task})", "value": round(stored_rate, 4)},
        ]

    def table(self) -> pd.DataFrame:
        """The rows for printing: whole numbers as they are, rates and times to 3 decimals, undefined as 'n/a'."""
        shown = [
            {
                "metric": r["metric"],
                "value": r["value"]
                if isinstance(r["value"], int)
                else ("n/a" if not math.isfinite(r["value"]) else f"{r['value']:.3f}".rstrip("0").rstrip(".")),
            }
            for r in self.rows()
        ]
        return pd.DataFrame(shown, dtype=object).astype(str)

    def as_dict(self) -> dict:
        """The report for JSON: undefined numbers (no answers yet) are None, so the file is strict JSON."""

        def finite(value):
            return None if isinstance(value, float) and not math.isfinite(value) else value

        return {
            "task": self.task,
            "labeler": self.labeler,
            "prompt_hash": self.prompt_hash,
            "backend": self.backend,
            "url": self.url,
            "constrain": self.constrain,
            "shots": self.shots,
            "interrupted": self.interrupted,
            "stopped": self.stop_reason is not None,
            "stop_reason": self.stop_reason,
            "notes": self.notes,
            "failures": self.failures[:20],
            **{r["metric"]: finite(r["value"]) for r in self.rows()},
        }


def check_run_options(concurrency: int, limit: int | None) -> None:
    if concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    if limit is not None and limit < 0:
        raise InputError("--limit must be >= 0")


def label_items(
    items: pd.DataFrame,
    *,
    task: str,
    store,
    backend: Backend,
    prompt: Prompt,
    examples: Sequence[Example] = (),
    labeler: str | None = None,
    concurrency: int = 4,
    limit: int | None = None,
    progress: Progress | None = None,
) -> RunReport:
    """Label every item not yet labelled for (task, labeler); each answer is stored as soon as it comes.

    `items` has columns id and text. `store` is a `mhaudit.tables.label_store.LabelStore`. Raises ServerUnreachable /
    ServerRejected (after storing everything answered so far) when the run cannot go on; a KeyboardInterrupt
    stops submitting, lets the requests in flight finish and store, and is re-raised with `report.interrupted`.
    Either exception carries the run's report as `.report`. The run is a stage of `progress`, one step per
    item asked (its status: the invalid, failed and positive counts); what it will do is a note first.
    """
    progress = ensure(progress)
    check_run_options(concurrency, limit)
    backend.prepare()
    labeler = labeler or _labeler_name(backend.model)
    digest = prompt.hash(examples, backend.settings())
    report = RunReport(
        task=task,
        labeler=labeler,
        prompt_hash=digest,
        backend=backend.name,
        url=backend.url,
        constrain=backend.constrain,
        shots=len(examples),
        n_items=len(items),
        notes=list(backend.notes),
    )
    todo = _todo(items, store, report, limit)
    progress.note(
        f"labelling {report.n_todo} of {report.n_items} items for task '{task}' with {labeler} "
        f"({report.backend} at {report.url}, constrain {report.constrain}, {report.shots}-shot, prompt "
        f"{digest[:12]}); {report.n_skipped} already labelled"
    )
    labelling = _Labelling(store, backend, prompt, examples, report, progress)
    start = time.perf_counter()
    try:
        with progress.stage(f"label {task} with {labeler}", total=report.n_todo):
            fatal = labelling.run(todo, concurrency)
    except KeyboardInterrupt as stop:
        setattr(stop, "report", report)  # the caller reads the run's report off the exception
        raise
    finally:
        report.wall_s = time.perf_counter() - start
        _stored(report, store)
    if fatal is not None:
        report.stop_reason = brief(fatal)
        setattr(fatal, "report", report)
        raise fatal
    return report


def unstarted_report(
    backend: Backend, exc: BaseException, *, task: str, labeler: str | None, shots: int, n_items: int
) -> RunReport:
    """The report of a run whose server check (`Backend.prepare`) failed: nothing asked, `stop_reason` set."""
    name = labeler or str(backend.model or "") or "(no model named: the server check failed first)"
    return RunReport(
        task=task,
        labeler=name,
        prompt_hash="",
        backend=backend.name,
        url=backend.url,
        constrain=backend.constrain,
        shots=shots,
        n_items=n_items,
        stop_reason=brief(exc),
    )


def _todo(items: pd.DataFrame, store, report: RunReport, limit: int | None) -> pd.DataFrame:
    """The items not yet labelled by the report's labeler (the first `limit` of them); counts the skipped ones
    and notes those labelled with another prompt hash."""
    done = store.labelled(report.task, report.labeler)
    todo = items[~items["id"].astype(str).isin(done)]
    report.n_skipped = len(items) - len(todo)
    if limit is not None:
        todo = todo.iloc[:limit]
    report.n_todo = len(todo)
    if done:
        old = store.frame(task=report.task, labeler=report.labeler)
        other = old[(old["prompt_hash"] != report.prompt_hash) & old["item_id"].isin(set(items["id"].astype(str)))]
        if len(other):
            report.notes.append(
                f"{len(other)} of the skipped items were labelled with a different prompt hash "
                f"({', '.join(sorted(set(other['prompt_hash'].fillna('none').str[:12])))}); they are "
                "kept (one label per item, task and labeler); pass another --labeler to label "
                "them again with this prompt"
            )
    return todo


class _Labelling:
    """One run's requests: a thread pool asks and stores each item; the answers are counted into the report."""

    def __init__(
        self,
        store,
        backend: Backend,
        prompt: Prompt,
        examples: Sequence[Example],
        report: RunReport,
        progress: Progress,
    ):
        self.store, self.backend, self.prompt, self.examples = store, backend, prompt, examples
        self.report, self.progress = report, progress

    def run(self, todo: pd.DataFrame, concurrency: int) -> BaseException | None:
        """Ask every item, at most 2 x concurrency queued; the fatal error that stopped submitting, if any."""
        pending: dict[Future, str] = {}
        fatal: BaseException | None = None
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="mhaudit-llm")
        try:
            rows = iter(zip(todo["id"].astype(str), todo["text"].astype(str)))
            while True:
                while fatal is None and len(pending) < 2 * concurrency:
                    row = next(rows, None)
                    if row is None:
                        break
                    pending[pool.submit(self.ask, *row)] = row[0]
                if not pending:
                    break
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    item_id = pending.pop(future)
                    try:
                        self.settle(future, item_id)
                    except (ServerUnreachable, ServerRejected) as exc:  # stop submitting; drain what is in flight
                        fatal = fatal or exc
        except KeyboardInterrupt:
            self.report.interrupted = True
            self._drain(pending)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return fatal

    def ask(self, item_id: str, text: str) -> Answer:
        answer = self.backend.ask(self.prompt.messages(text, self.examples))
        report = self.report
        self.store.add(
            [
                {
                    "item_id": item_id,
                    "task": report.task,
                    "labeler": report.labeler,
                    "kind": "llm",
                    "value": answer.value,
                    "raw_answer": answer.raw,
                    "prompt_hash": report.prompt_hash,
                    "latency_ms": round(answer.latency_ms, 3),
                }
            ]
        )
        return answer

    def settle(self, future: Future, item_id: str) -> None:
        """Count a finished request into the report (in the submitting thread only: no lock)."""
        report = self.report
        try:
            answer = future.result()
        except RequestFailed as exc:
            report.n_failed += 1
            report.failures.append(f"{item_id}: {exc}")
        else:
            report.n_answered += 1
            report.n_invalid += answer.value is None
            report.n_positive += answer.value == 1
            report.n_retried += answer.attempts > 1
            report.latencies_ms.append(answer.latency_ms)
        rate = report.n_answered / max(1, report.n_answered + report.n_failed)
        self.progress.advance(
            status=f"invalid {report.n_invalid} failed {report.n_failed} positive "
            f"{report.n_positive} ({rate:.0%} answered)"
        )

    def _drain(self, pending: dict[Future, str]) -> None:
        """After Ctrl-C: cancel what has not started; let the requests in flight finish and store."""
        in_flight = [(future, item_id) for future, item_id in pending.items() if not future.cancel()]
        for future, item_id in in_flight:  # let them finish and store
            with contextlib.suppress(Exception):  # the run is ending anyway
                self.settle(future, item_id)


def _stored(report: RunReport, store) -> None:
    frame = store.frame(task=report.task, labeler=report.labeler)
    report.stored_total = len(frame)
    report.stored_valid = int(frame["value"].notna().sum())
    report.stored_positive = int((frame["value"] == 1).sum())


def _labeler_name(model: str | None) -> str:
    """The model name as the labeler; a llama.cpp model id that is a file path is reduced to the file name."""
    name = str(model or "llm")
    return Path(name).name if ("/" in name and name.lower().endswith(".gguf")) else name
