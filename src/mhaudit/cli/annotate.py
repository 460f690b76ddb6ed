"""`mhaudit annotate` (the annotation app) and `mhaudit labels export / import` (annotation sheets)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from mhaudit.cli import labels
from mhaudit.cli.console import ctrl_c_stops, err, guarded, out
from mhaudit.core.errors import InputError


SampleOpt = Annotated[
    Path,
    typer.Option(
        "--sample",
        help="Validation sample (.parquet/.csv/.jsonl) with item_id, task, text; other columns are never shown.",
    ),
]
AnswersOpt = Annotated[Path, typer.Option("--labels", help="Label store (.sqlite) the answers are written to.")]
AnnotatorOpt = Annotated[
    list[str], typer.Option("--annotator", help="Annotator name (repeat: --annotator alice --annotator bob).")
]
AdjudicatorOpt = Annotated[str | None, typer.Option(help="Adjudicator name: gets the disagreements view.")]
HostOpt = Annotated[str, typer.Option(help="Address to listen on (loopback unless --public).")]
PortOpt = Annotated[int, typer.Option(help="Port (0: any free port).")]
PublicOpt = Annotated[
    bool,
    typer.Option(
        "--public", help="Allow a non-loopback --host (post texts reach the network; tokens are still required)."
    ),
]
NewTokensOpt = Annotated[
    bool, typer.Option("--new-tokens", help="Issue new links for everyone named; the old links stop working.")
]
KeepOrderOpt = Annotated[
    bool, typer.Option("--keep-order", help="Show items in file order instead of a fixed shuffled order.")
]
GuidelinesOpt = Annotated[
    Path | None, typer.Option(help="Markdown guidelines to show instead of the built-in binary rules.")
]
LogRequestsOpt = Annotated[
    bool, typer.Option("--log-requests", help="Print each request's method, route (token hidden) and status.")
]
PostStoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Post store (.sqlite or postgresql://) holding the "
        "texts of a sample of post ids (mhaudit audit monitor's).",
    ),
]


@guarded
def annotate(
    sample: SampleOpt,
    labels: AnswersOpt,
    annotator: AnnotatorOpt,
    adjudicator: AdjudicatorOpt = None,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8765,
    public: PublicOpt = False,
    new_tokens: NewTokensOpt = False,
    keep_order: KeepOrderOpt = False,
    guidelines: GuidelinesOpt = None,
    log_requests: LogRequestsOpt = False,
    store: PostStoreOpt = None,
) -> None:
    """Serve the annotation app for a validation sample (docs/annotation.md).

    Annotators label item by item, blind to the weak label and to each other; the adjudicator resolves
    the disagreements. Prints one personal link per person; stops with Ctrl-C.
    """
    from mhaudit.weak_supervision.annotate import open_session, tokens_path

    def notify(message: str) -> None:
        err.print(f"[yellow]annotate:[/] {escape(message)}", highlight=False, soft_wrap=True)

    session = open_session(
        sample,
        labels,
        annotator,
        adjudicator,
        host=host,
        port=port,
        public=public,
        new_tokens=new_tokens,
        keep_order=keep_order,
        guidelines=guidelines,
        notify=notify,
        log_requests=log_requests,
        posts=store,
    )
    try:
        _print_links(session, sample, labels)
        if public:
            err.print(
                f"[yellow]warning:[/] serving on {escape(host)} (--public): anyone who can reach this machine "
                "can load the pages; each person still needs their link",
                highlight=False,
                soft_wrap=True,
            )
        # the handlers are in place before 'Press Ctrl-C' is printed: a signal sent as soon as the line is read
        # stops the server with its summary, not with a traceback (SIGINT) or the default kill (SIGTERM)
        with contextlib.suppress(KeyboardInterrupt), ctrl_c_stops():
            out.print(
                f"links are personal; only their hashes are kept ({escape(str(tokens_path(labels)))}). "
                "Press Ctrl-C to stop.",
                highlight=False,
                soft_wrap=True,
            )
            session.server.serve_forever(poll_interval=0.25)
        _print_stopped(session)
    finally:
        session.close()


def _print_links(session, sample: Path, labels: Path) -> None:
    """What is served from where, then one personal link per person (or when their unchanged link was issued)."""
    app = session.app
    out.print(
        f"serving {len(app.items)} items (task {escape(', '.join(app.tasks))}) from {escape(str(sample))}; "
        f"answers are written to {escape(str(labels))}",
        highlight=False,
        soft_wrap=True,
    )
    for person, url in session.urls().items():
        link = url or (
            f"link unchanged since {session.tokens.issued_at(person)} (use the link printed then, or --new-tokens)"
        )
        out.print(f"  {escape(person.name)} ({person.role}): {link}", highlight=False, soft_wrap=True)


def _print_stopped(session) -> None:
    """The session's progress when the server stops: labelled per person, disagreements, consensus recorded."""
    from mhaudit.weak_supervision.annotate import progress

    state = progress(session)
    done = ", ".join(f"{escape(name)} {n}/{state['items']}" for name, n in state["labelled"].items())
    out.print(
        f"stopped. labelled: {done}; disagreements {state['disagreements']}, resolved "
        f"{state['resolved']}; agreed items recorded as consensus {state['agreed_recorded']}/"
        f"{state['agreed']}",
        highlight=False,
        soft_wrap=True,
    )


@labels.app.command("export")
@guarded
def export(
    labels: Annotated[Path, typer.Option("--labels", help="Label store (.sqlite).")],
    out_path: Annotated[Path, typer.Option("--out", help="Sheet to write: .csv, .jsonl or .parquet.")],
    task: Annotated[str | None, typer.Option(help="Only this task.")] = None,
    labeler: Annotated[
        str | None, typer.Option(help="Only this labeler (with --sample: the annotator the sheet is for).")
    ] = None,
    kind: Annotated[str | None, typer.Option(help="Only this kind: human, adjudicated, llm, lexicon.")] = None,
    sample: Annotated[
        Path | None,
        typer.Option(
            help="Write a sheet to label elsewhere: one row per sample item "
            "with its text, prefilled with --labeler's labels."
        ),
    ] = None,
) -> None:
    """Write labels (or a sheet to label elsewhere) as CSV, JSONL or Parquet."""
    from mhaudit.tables.label_store import KINDS, LabelStore
    from mhaudit.weak_supervision.sheets import blank_sheet, write_sheet

    if not labels.exists():
        raise InputError("no such label store", path=labels)
    if kind is not None and kind not in KINDS:
        raise InputError(f"--kind '{kind}' is not one of {', '.join(KINDS)}")
    with LabelStore(labels) as store:
        if sample is not None:
            from mhaudit.weak_supervision.annotate.sample import load_sample

            if labeler is None:
                raise InputError("--sample writes a sheet for one annotator; name them with --labeler")
            frame = blank_sheet(load_sample(sample, keep_order=True), store, labeler, task)
            write_sheet(frame, out_path)
            out.print(
                f"wrote a sheet of {len(frame)} items for {escape(labeler)} "
                f"({int(frame['value'].notna().sum())} already labelled) to {escape(str(out_path))}; "
                "it contains the post texts: keep it private",
                highlight=False,
                soft_wrap=True,
            )
            return
        where = {k: v for k, v in (("task", task), ("labeler", labeler), ("kind", kind)) if v is not None}
        frame = store.frame(**where)
        if frame.empty:
            labelers = ", ".join(sorted(store.frame()["labeler"].unique())) or "none"
            chosen = " ".join(f"--{k} '{v}'" for k, v in where.items()) or "(no filter)"
            raise InputError(f"no labels match {chosen} (labelers in the store: {labelers})", path=labels)
    write_sheet(frame, out_path)
    out.print(
        f"wrote {len(frame)} labels ({frame['labeler'].nunique()} labelers) to {escape(str(out_path))}",
        highlight=False,
        soft_wrap=True,
    )


@labels.app.command("import")
@guarded
def import_(
    sheet: Annotated[
        Path, typer.Argument(help="Sheet: .csv/.jsonl/.parquet (mhaudit) or a Label Studio / Argilla JSON export.")
    ],
    labels: Annotated[Path, typer.Option("--labels", help="Label store (.sqlite) to write to (created if absent).")],
    fmt: Annotated[str, typer.Option("--format", help="mhaudit, label-studio or argilla.")] = "mhaudit",
    labeler: Annotated[
        str | None,
        typer.Option(
            help="Labeler name for rows without one; for Label Studio / Argilla the name of the one annotator imported."
        ),
    ] = None,
    task: Annotated[str | None, typer.Option(help="Task for rows without one.")] = None,
    kind: Annotated[str, typer.Option(help="Kind for rows without one.")] = "human",
    user: Annotated[
        str | None,
        typer.Option(
            help="Label Studio / Argilla: import only this annotator's "
            "labels (completed_by id, or the email Label Studio wrote for "
            "an annotator without one, with --labeler / user_id)."
        ),
    ] = None,
    positive: Annotated[list[str] | None, typer.Option(help="Extra choice name meaning 1 (repeatable).")] = None,
    negative: Annotated[list[str] | None, typer.Option(help="Extra choice name meaning 0 (repeatable).")] = None,
    label_field: Annotated[str, typer.Option(help="Label Studio from_name / Argilla question of the label.")] = "label",
    tags_field: Annotated[str, typer.Option(help="... of the error-source tags.")] = "tags",
    note_field: Annotated[str, typer.Option(help="... of the note.")] = "note",
    id_field: Annotated[
        str, typer.Option(help="Data field / Argilla field or metadata holding the item id.")
    ] = "item_id",
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite labels the store already has from the same labeler.")
    ] = False,
) -> None:
    """Read an annotation sheet into the label store; a value other than 0/1 stops the import."""
    from mhaudit.tables.label_store import LabelStore
    from mhaudit.weak_supervision.annotate.adjudication import TAGS
    from mhaudit.weak_supervision.sheets import ChoiceMap, Options, check_labeler_kinds, read_sheet

    opts = Options(
        labeler=labeler,
        task=task,
        kind=kind,
        user=user,
        label_field=label_field,
        tags_field=tags_field,
        note_field=note_field,
        id_field=id_field,
        choices=ChoiceMap.with_extra(positive or (), negative or ()),
    )
    result = read_sheet(sheet, fmt, opts)  # validated in full before the store is created or touched
    with LabelStore(labels) as store:
        check_labeler_kinds(store, result.rows)
        written = store.add(result.rows, replace=replace) if result.rows else 0
    labelers = sorted({row["labeler"] for row in result.rows})
    kept = len(result.rows) - written
    message = (
        f"read {len(result.rows)} labels from {escape(str(sheet))} ({len(labelers)} labelers: "
        f"{escape(', '.join(labelers))}); wrote {written} to {escape(str(labels))}"
    )
    if kept:
        message += f"; kept {kept} labels the store already had (--replace overwrites them)"
    if result.skipped:
        message += f"; skipped {result.skipped} rows without a label"
    out.print(message, highlight=False, soft_wrap=True)
    unknown = sorted({t for row in result.rows for t in row.get("tags") or [] if t not in TAGS})
    if unknown:
        err.print(
            f"[yellow]note:[/] tags outside the app's list were kept as written: {escape(', '.join(unknown))}",
            highlight=False,
            soft_wrap=True,
        )


def register(root: typer.Typer) -> None:
    root.command("annotate")(annotate)
