"""`mhaudit label ...`: LLM weak labels (docs/labels.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from mhaudit.cli.console import err, guarded, out, print_table
from mhaudit.core.errors import InputError

app = typer.Typer(help="Weak labels: ask an LLM for 1 or 0 per item, stored in a labels table.", no_args_is_help=True)


@app.command("llm")
@guarded
def llm(items: Annotated[Path, typer.Option("--items", help="Post store (.sqlite from mhaudit collect) or a "
                                                           "corpus/table (.parquet, .csv, .jsonl) with id and text.")],
        task: Annotated[str, typer.Option(help="Task: si, mh or stress (the built-in prompt of that name).")],
        labels: Annotated[Path, typer.Option("--labels", help="Label store (SQLite) to write; created if absent.")],
        backend: Annotated[str, typer.Option(help="openai (any /v1/chat/completions server) or ollama.")] = "ollama",
        url: Annotated[str | None, typer.Option(help="Server URL [ollama: http://127.0.0.1:11434, "
                                                     "openai: http://127.0.0.1:8080].")] = None,
        model: Annotated[str | None, typer.Option(help="Model name [ollama: llama3:8b; openai: the server's "
                                                       "first model].")] = None,
        labeler: Annotated[str | None, typer.Option(help="Labeler name in the table [the model name].")] = None,
        prompt: Annotated[str | None, typer.Option(help="Prompt name or .toml file [the task's built-in].")] = None,
        shots: Annotated[int | None, typer.Option(help="k-shot examples [the prompt's default: 0, stress 3].")] = None,
        pool: Annotated[Path | None, typer.Option(help="Labelled pool (corpus .parquet/.csv with text and "
                                                       "label) for k-shot examples.")] = None,
        positive: Annotated[str | None, typer.Option(help="Positive class name in the pool (when labels are "
                                                          "not 0/1).")] = None,
        seed: Annotated[int, typer.Option(help="Seed for the server and the k-shot draw.")] = 0,
        concurrency: Annotated[int, typer.Option(help="Requests in flight.")] = 4,
        timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 60.0,
        retries: Annotated[int, typer.Option(help="Retries per request on connection errors, timeouts, "
                                                  "429 and 5xx.")] = 3,
        backoff: Annotated[float, typer.Option(help="First retry wait in seconds; doubles each retry.")] = 0.5,
        constrain: Annotated[str, typer.Option(help="Output constraint: auto, grammar (llama.cpp), choice "
                                                    "(vLLM), schema (Ollama), none.")] = "auto",
        max_tokens: Annotated[int, typer.Option(help="Answer tokens at most.")] = 2,
        limit: Annotated[int | None, typer.Option(help="Label at most N new items this run.")] = None,
        id_col: Annotated[str, typer.Option(help="Id column of a table input.")] = "id",
        text_col: Annotated[str, typer.Option(help="Text column of a table input.")] = "text",
        api_key: Annotated[str | None, typer.Option(help="Bearer token, if the server wants one.",
                                                    envvar="MHAUDIT_LLM_API_KEY")] = None,
        report_json: Annotated[Path | None, typer.Option("--report-json", help="Also write the run report "
                                                                                "as JSON here.")] = None,
        progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True) -> None:
    """Label items with an LLM (1 = positive, 0 = negative), resumably, one stored label per item."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from mhaudit.tables.io import write_text_atomic
    from mhaudit.weak_supervision.labelers.llm import (
        RetryPolicy, RunReport, brief, check_run_options, draw_examples, label_items, make_backend, read_items,
        read_pool,
    )
    from mhaudit.weak_supervision.labelers.prompts import load_prompt
    from mhaudit.tables.label_store import LabelStore

    spec = load_prompt(prompt or task)
    if spec.task != task:
        err.print(f"note: prompt {escape(spec.source)} was written for task '{escape(spec.task)}'; labels are "
                  f"stored under task '{escape(task)}'", highlight=False, soft_wrap=True)
    frame = read_items(items, id_col=id_col, text_col=text_col)
    k = spec.default_shots if shots is None else shots
    if k < 0:
        raise InputError("--shots must be >= 0")
    examples = []
    if k:
        if pool is None:
            raise InputError(f"{k}-shot prompting needs --pool (a labelled corpus with text and label)"
                             + ("; the stress prompt is 3-shot by default, pass --shots 0 for zero-shot"
                                if shots is None else ""))
        examples = draw_examples(read_pool(pool, positive=positive), k, seed=seed,
                                 exclude_ids=set(frame["id"]), exclude_texts=set(frame["text"]))
    client = make_backend(backend, url, model, timeout=timeout, policy=RetryPolicy(retries, backoff), seed=seed,
                          max_tokens=max_tokens, constrain=constrain, api_key=api_key or os.environ.get(
                              "MHAUDIT_LLM_API_KEY"), concurrency=concurrency)
    holder = {}
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[status]}"), TimeRemainingColumn(), console=err,
                   disable=not progress, transient=False)

    def started(report) -> None:
        holder["report"] = report
        err.print(f"labelling {report.n_todo} of {report.n_items} items for task '{escape(task)}' with "
                  f"{escape(report.labeler)} ({report.backend} at {escape(report.url)}, constrain {report.constrain}, "
                  f"{report.shots}-shot, prompt {report.prompt_hash[:12]}); {report.n_skipped} already labelled",
                  highlight=False, soft_wrap=True)
        holder["bar"] = bar.add_task("labels", total=report.n_todo, status="")

    def answered(item_id, answer, report) -> None:
        rate = report.n_answered / max(1, report.n_answered + report.n_failed)
        bar.update(holder["bar"], advance=1, status=f"invalid {report.n_invalid} failed {report.n_failed} "
                                                    f"positive {report.n_positive} ({rate:.0%} answered)")

    def write_report(report) -> None:
        if report_json and report is not None:  # atomically: a reader never sees half a report
            write_text_atomic(report_json, json.dumps(report.as_dict(), indent=2, default=str, allow_nan=False))

    check_run_options(concurrency, limit)
    try:  # the server first: a run that cannot start leaves no (empty) label store behind
        client.prepare()
    except InputError as exc:
        client.close()
        write_report(RunReport(task=task, labeler=labeler or str(client.model or ""), prompt_hash="",
                               backend=client.name, url=client.url,
                               constrain=client.constrain, shots=len(examples), n_items=len(frame),
                               stop_reason=brief(exc)))
        raise
    except BaseException:
        client.close()
        raise
    code = 0
    try:
        store = LabelStore(labels)
    except BaseException:
        client.close()
        raise
    try:
        with bar:
            report = label_items(frame, task=task, store=store, backend=client, prompt=spec, examples=examples,
                                 labeler=labeler, concurrency=concurrency, limit=limit, on_result=answered,
                                 on_start=started)
    except KeyboardInterrupt:
        report, code = holder.get("report"), 130
        err.print("interrupted: every answer received so far is stored; run the same command again to go on",
                  highlight=False, soft_wrap=True)
    except InputError as exc:  # a fatal stop (server gone, model unloaded): the partial report, marked stopped
        report = getattr(exc, "report", None)
        if report is not None:
            _show(report)
            write_report(report)
        raise
    finally:
        store.close()
        client.close()
    if report is not None:
        _show(report)
        write_report(report)
    if code:
        raise typer.Exit(code)


def _show(report) -> None:
    print_table(f"LLM labels: task {report.task}, labeler {report.labeler}, prompt {report.prompt_hash[:12]}",
                report.table())
    for note in report.notes:
        err.print(f"note: {escape(note)}", highlight=False, soft_wrap=True)
    if report.failures:
        err.print(f"{len(report.failures)} request(s) failed after retries (not stored; the next run asks again), "
                  f"first: {escape(report.failures[0])}", highlight=False, soft_wrap=True)


@app.command("prompts")
@guarded
def prompts() -> None:
    """List the built-in labelling prompts (task, version, default shots, zero-shot template hash)."""
    import pandas as pd

    from mhaudit.weak_supervision.labelers.prompts import available, load_prompt

    rows = []
    for name in available():
        spec = load_prompt(name)
        rows.append({"prompt": name, "task": spec.task, "version": spec.version, "shots": spec.default_shots,
                     "template hash": spec.hash()[:12], "description": spec.description})
    print_table("Labelling prompts (hash of the template alone; a run's hash adds examples and model settings)",
                pd.DataFrame(rows))
    out.print("pass --prompt FILE.toml to use your own (see docs/labels.md)")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="label")
