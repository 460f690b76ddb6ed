"""`mhaudit labels llm` and `mhaudit labels prompts`: LLM weak labels (docs/labels.md)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from mhaudit.cli import labels as labels_group
from mhaudit.cli.console import err, guarded, out, print_table, stage_progress
from mhaudit.core.errors import InputError

if TYPE_CHECKING:
    from mhaudit.weak_supervision.labelers.llm import RunReport


ItemsOpt = Annotated[
    Path,
    typer.Option(
        "--items",
        help="Post store (.sqlite from mhaudit collect) or a corpus/table (.parquet, .csv, .jsonl) with id and text.",
    ),
]
LlmTaskOpt = Annotated[str, typer.Option(help="Task: si, mh or stress (the built-in prompt of that name).")]
LabelStoreOpt = Annotated[Path, typer.Option("--labels", help="Label store (SQLite) to write; created if absent.")]
BackendOpt = Annotated[str, typer.Option(help="openai (any /v1/chat/completions server) or ollama.")]
UrlOpt = Annotated[
    str | None, typer.Option(help="Server URL [ollama: http://127.0.0.1:11434, openai: http://127.0.0.1:8080].")
]
ModelOpt = Annotated[str | None, typer.Option(help="Model name [ollama: llama3:8b; openai: the server's first model].")]
LabelerOpt = Annotated[str | None, typer.Option(help="Labeler name in the table [the model name].")]
PromptOpt = Annotated[str | None, typer.Option(help="Prompt name or .toml file [the task's built-in].")]
ShotsOpt = Annotated[int | None, typer.Option(help="k-shot examples [the prompt's default: 0, stress 3].")]
PoolOpt = Annotated[
    Path | None, typer.Option(help="Labelled pool (corpus .parquet/.csv with text and label) for k-shot examples.")
]
PositiveOpt = Annotated[str | None, typer.Option(help="Positive class name in the pool (when labels are not 0/1).")]
SeedOpt = Annotated[int, typer.Option(help="Seed for the server and the k-shot draw.")]
ConcurrencyOpt = Annotated[int, typer.Option(help="Requests in flight.")]
TimeoutOpt = Annotated[float, typer.Option(help="Seconds per request.")]
RetriesOpt = Annotated[int, typer.Option(help="Retries per request on connection errors, timeouts, 429 and 5xx.")]
BackoffOpt = Annotated[float, typer.Option(help="First retry wait in seconds; doubles each retry.")]
ConstrainOpt = Annotated[
    str, typer.Option(help="Output constraint: auto, grammar (llama.cpp), choice (vLLM), schema (Ollama), none.")
]
MaxTokensOpt = Annotated[int, typer.Option(help="Answer tokens at most.")]
LimitOpt = Annotated[int | None, typer.Option(help="Label at most N new items this run.")]
IdColOpt = Annotated[str, typer.Option(help="Id column of a table input.")]
TextColOpt = Annotated[str, typer.Option(help="Text column of a table input.")]
ApiKeyOpt = Annotated[
    str | None, typer.Option(help="Bearer token, if the server wants one.", envvar="MHAUDIT_LLM_API_KEY")
]
ReportJsonOpt = Annotated[Path | None, typer.Option("--report-json", help="Also write the run report as JSON here.")]
ProgressOpt = Annotated[
    bool, typer.Option(help="Show the count of items asked (a bar on a terminal, timed lines in a log).")
]


def register(root: typer.Typer) -> None:
    labels_group.app.command("llm")(llm)
    labels_group.app.command("prompts")(prompts)


@guarded
def llm(
    items: ItemsOpt,
    task: LlmTaskOpt,
    labels: LabelStoreOpt,
    backend: BackendOpt = "ollama",
    url: UrlOpt = None,
    model: ModelOpt = None,
    labeler: LabelerOpt = None,
    prompt: PromptOpt = None,
    shots: ShotsOpt = None,
    pool: PoolOpt = None,
    positive: PositiveOpt = None,
    seed: SeedOpt = 0,
    concurrency: ConcurrencyOpt = 4,
    timeout: TimeoutOpt = 60.0,
    retries: RetriesOpt = 3,
    backoff: BackoffOpt = 0.5,
    constrain: ConstrainOpt = "auto",
    max_tokens: MaxTokensOpt = 2,
    limit: LimitOpt = None,
    id_col: IdColOpt = "id",
    text_col: TextColOpt = "text",
    api_key: ApiKeyOpt = None,
    report_json: ReportJsonOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Label items with an LLM (1 = positive, 0 = negative), resumably, one stored label per item."""
    from mhaudit.weak_supervision.labelers.llm import check_run_options
    from mhaudit.weak_supervision.labelers.llm_backends import make_backend
    from mhaudit.weak_supervision.labelers.llm_items import read_items, shot_examples
    from mhaudit.weak_supervision.labelers.llm_retry import RetryPolicy

    spec = _load_prompt(prompt, task)
    frame = read_items(items, id_col=id_col, text_col=text_col)
    examples = shot_examples(frame, shots, default_shots=spec.default_shots, pool=pool, positive=positive, seed=seed)
    client = make_backend(
        backend,
        url,
        model,
        timeout=timeout,
        policy=RetryPolicy(retries, backoff),
        seed=seed,
        max_tokens=max_tokens,
        constrain=constrain,
        api_key=api_key,
        concurrency=concurrency,
    )
    check_run_options(concurrency, limit)
    _prepare(client, report_json, task=task, labeler=labeler, shots=len(examples), n_items=len(frame))
    report, code = _label(
        client,
        labels,
        report_json,
        frame=frame,
        task=task,
        prompt=spec,
        examples=examples,
        labeler=labeler,
        concurrency=concurrency,
        limit=limit,
        progress=stage_progress(steps=progress),
    )
    if report is not None:
        _show(report)
        _write_report(report_json, report)
        code = code or _failure_code(report)
    if code:
        raise typer.Exit(code)


def _load_prompt(prompt: str | None, task: str):
    """The prompt named (or the task's built-in); a note when it was written for another task than the labels'."""
    from mhaudit.weak_supervision.labelers.prompts import load_prompt

    spec = load_prompt(prompt or task)
    if spec.task != task:
        err.print(
            f"note: prompt {escape(spec.source)} was written for task '{escape(spec.task)}'; labels are "
            f"stored under task '{escape(task)}'",
            highlight=False,
            soft_wrap=True,
        )
    return spec


SOME_FAILED = 3  # the run finished, but some requests failed: they were not stored (README, exit codes)


def _failure_code(report) -> int:
    """0 when every request was answered; 2 (one sentence) when none was; SOME_FAILED when some failed."""
    if not report.n_failed:
        return 0
    first = f" (first: {escape(report.failures[0])})" if report.failures else ""
    if not report.n_answered:
        err.print(
            f"[red]error:[/] no item got an answer: all {report.n_failed} request(s) failed{first}; nothing was stored",
            highlight=False,
            soft_wrap=True,
        )
        return 2
    err.print(
        f"{report.n_failed} of {report.n_failed + report.n_answered} request(s) failed (exit code "
        f"{SOME_FAILED}); run the same command again to ask for those items",
        highlight=False,
        soft_wrap=True,
    )
    return SOME_FAILED


def _prepare(client, report_json: Path | None, **run) -> None:
    """Check the server first: a run that cannot start leaves no (empty) label store behind, only its report."""
    from mhaudit.weak_supervision.labelers.llm import unstarted_report

    try:
        client.prepare()
    except BaseException as exc:
        client.close()
        if isinstance(exc, InputError):
            _write_report(report_json, unstarted_report(client, exc, **run))
        raise


def _label(client, labels: Path, report_json: Path | None, *, frame, **run) -> tuple[RunReport | None, int]:
    """Run the labelling into the label store: (the report or None, exit code); closes the store and the client."""
    from mhaudit.tables.label_store import LabelStore
    from mhaudit.weak_supervision.labelers.llm import label_items

    with contextlib.closing(client), LabelStore(labels) as store:
        try:
            return label_items(frame, store=store, backend=client, **run), 0
        except KeyboardInterrupt as exc:
            err.print(
                "interrupted: every answer received so far is stored; run the same command again to go on",
                highlight=False,
                soft_wrap=True,
            )
            return getattr(exc, "report", None), 130
        except InputError as exc:  # a fatal stop (server gone, model unloaded): the partial report, marked stopped
            if (report := getattr(exc, "report", None)) is not None:
                _show(report)
                _write_report(report_json, report)
            raise


def _write_report(report_json: Path | None, report) -> None:
    """The run report as JSON, if asked for; atomically: a reader never sees half a report."""
    from mhaudit.tables.io import write_text_atomic

    if report_json and report is not None:
        write_text_atomic(report_json, json.dumps(report.as_dict(), indent=2, default=str, allow_nan=False))


def _show(report) -> None:
    print_table(
        f"LLM labels: task {report.task}, labeler {report.labeler}, prompt {report.prompt_hash[:12]}", report.table()
    )
    for note in report.notes:
        err.print(f"note: {escape(note)}", highlight=False, soft_wrap=True)
    if report.failures:
        err.print(
            f"{len(report.failures)} request(s) failed after retries (not stored; the next run asks again), "
            f"first: {escape(report.failures[0])}",
            highlight=False,
            soft_wrap=True,
        )


@guarded
def prompts() -> None:
    """List the built-in labelling prompts (task, version, default shots, zero-shot template hash)."""
    import pandas as pd

    from mhaudit.weak_supervision.labelers.prompts import available, load_prompt

    specs = {name: load_prompt(name) for name in available()}
    rows = [
        {
            "prompt": name,
            "task": spec.task,
            "version": spec.version,
            "shots": spec.default_shots,
            "template hash": spec.hash()[:12],
            "description": spec.description,
        }
        for name, spec in specs.items()
    ]
    print_table(
        "Labelling prompts (hash of the template alone; a run's hash adds examples and model settings)",
        pd.DataFrame(rows),
    )
    out.print("pass --prompt FILE.toml to use your own (see docs/labels.md)")
