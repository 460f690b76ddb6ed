"""`mhaudit collect ...`: stream Bluesky posts that match the SI / MH lexicons into a post store."""

from __future__ import annotations

import secrets
import signal
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli.console import ctrl_c_stops, err, guarded, out, print_table, stage_progress
from mhaudit.core.errors import InputError

app = typer.Typer(
    help="Collect posts from the Bluesky stream (Jetstream, either wire, or the firehose).", no_args_is_help=True
)
JETSTREAM_WIRES = ("auto", "subscribe", "xrpc")
LOG_EVERY_S = 60.0  # in a log (not a terminal), a line of counts this often


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="collect")


def _langs(values: list[str]) -> tuple[str, ...]:
    langs = tuple(part.strip().lower() for value in values for part in value.split(",") if part.strip())
    return () if "any" in langs else langs


def _wire(wire: str, firehose: bool) -> str:
    """The wire name the collector takes; one sentence for an unknown --wire or one combined with --firehose."""
    name = wire.strip().lower()
    if name not in JETSTREAM_WIRES:
        raise InputError(f"unknown --wire {wire!r}: use auto, subscribe or xrpc (the firehose is --firehose)")
    if firehose and name != "auto":
        raise InputError(
            f"--wire {name} and --firehose exclude each other: the firehose is a wire of its own "
            "(com.atproto.sync.subscribeRepos)"
        )
    return "firehose" if firehose else name


def _where(collector, rewind: float) -> str:
    resumed, start = collector.stats.cursor, collector.resume_cursor()
    if start is None:
        return "starting at the live tip"
    if resumed is None:  # an xrpc run seeded from the subscribe wire's time (see the note)
        return f"subscribing from the time {start} ({rewind:g} s before the saved time_us; no duplicate is added)"
    where = f"resuming from cursor {resumed}"
    if start != resumed:
        where += f" (subscribing from {start}, {rewind:g} s earlier; the overlap adds no duplicate)"
    return where


def _print_summary(store) -> None:
    from mhaudit.weak_supervision.lexicons.measured import collection_filters, recall_sentence

    for lexicons in collection_filters(store):
        out.print("recall: " + recall_sentence(lexicons), highlight=False)
    tables = store.summary()
    print_table("Posts per category (all runs in the store)", tables["per_category"])
    print_table("Posts per day (UTC, from createdAt)", tables["per_day"])


DbOpt = Annotated[
    str,
    typer.Option(
        "--db",
        metavar="PATH|URL",
        help="Post store: an SQLite file path, or a "
        "postgresql://user:password@host:port/dbname URL; created if absent, resumed "
        "if not.",
    ),
]
LexiconOpt = Annotated[
    list[str], typer.Option("--lexicon", help="'si', 'mh', 'wide' or a lexicon TOML file; repeat for several.")
]
RelayOpt = Annotated[
    str | None,
    typer.Option(
        help="Websocket URL (default: public Jetstream's /subscribe host, "
        "its xrpc host with --wire xrpc, or bsky.network with "
        "--firehose)."
    ),
]
WireOpt = Annotated[
    str,
    typer.Option(
        "--wire",
        metavar="auto|subscribe|xrpc",
        help="Jetstream wire: 'subscribe' "
        "(the /subscribe JSON wire), 'xrpc' (network.bsky.jetstream.subscribeEvents,"
        " as atproto's JetstreamClient), or 'auto': by the URL's path; a bare host "
        "tries xrpc, then subscribe if refused.",
    ),
]
FirehoseOpt = Annotated[
    bool, typer.Option("--firehose", help="Read the relay's raw firehose (CBOR/CAR) instead of Jetstream.")
]
DurationOpt = Annotated[str | None, typer.Option(help="Stop after this long: 30s, 10m, 2h, 14d.")]
MaxPostsOpt = Annotated[int | None, typer.Option(help="Stop after storing this many new posts.")]
LangsOpt = Annotated[
    list[str],
    typer.Option(
        "--langs",
        help="Keep posts whose langs include one of these "
        "(primary subtag; comma-separated or repeated; 'any' = no "
        "filter).",
    ),
]
RepliesOpt = Annotated[bool, typer.Option("--replies/--no-replies", help="Keep replies.")]
KeepRawIdsOpt = Annotated[
    bool, typer.Option("--keep-raw-ids", help="Also store raw DIDs and URIs (off: authors are pseudonymised).")
]
BatchSizeOpt = Annotated[int, typer.Option(help="Commit after this many posts (and at least every second).")]
MaxRetriesOpt = Annotated[int, typer.Option(help="Give up after this many failed connects in a row.")]
RewindOpt = Annotated[
    float,
    typer.Option(
        help="Subscribe wire: resume this many seconds before the saved cursor (the overlap adds no duplicate)."
    ),
]
DbRetryOpt = Annotated[
    float | None,
    typer.Option(
        help="PostgreSQL --db: seconds to wait for a server that restarts "
        "or fails over (default 30, or MHAUDIT_DB_RETRY_S)."
    ),
]


@app.command("bluesky")
@guarded
def bluesky(
    db: DbOpt,
    lexicon: LexiconOpt = None,  # type: ignore[assignment]  # None: not given
    relay: RelayOpt = None,
    wire: WireOpt = "auto",
    firehose: FirehoseOpt = False,
    duration: DurationOpt = None,
    max_posts: MaxPostsOpt = None,
    langs: LangsOpt = ["en"],  # noqa: B006
    replies: RepliesOpt = True,
    keep_raw_ids: KeepRawIdsOpt = False,
    batch_size: BatchSizeOpt = 500,
    max_retries: MaxRetriesOpt = 10,
    rewind: RewindOpt = 5.0,
    db_retry: DbRetryOpt = None,
) -> None:
    """Stream posts matching the lexicons into --db; resumable from the saved cursor (rerun the same command)."""
    from mhaudit.weak_supervision.collect.collector import (
        CollectOptions,
        Collector,
        PostFilter,
        RetryPolicy,
        parse_duration,
    )
    from mhaudit.weak_supervision.collect.dialects import check_store_path
    from mhaudit.weak_supervision.collect.store import PostStore
    from mhaudit.weak_supervision.lexicons import Lexicon

    db_path = check_store_path(db)
    _check_flags(lexicon, max_retries, rewind)
    chosen = _wire(wire, firehose)
    lexicons = [Lexicon.load(name) for name in lexicon]
    options = CollectOptions(
        langs=_langs(langs),
        replies=replies,
        batch_size=batch_size,
        duration_s=parse_duration(duration) if duration else None,
        max_posts=max_posts,
        retry=RetryPolicy(max_failures=max_retries),
        rewind_s=rewind,
    )
    post_filter = PostFilter(lexicons, langs=options.langs, replies=replies)
    with PostStore(db_path, keep_raw_ids=keep_raw_ids, retry_s=db_retry) as store:
        progress = stage_progress(every_s=LOG_EVERY_S)
        collector = Collector(store, post_filter, wire=chosen, relay=relay, options=options, progress=progress)
        wire_note = collector.settle_wire()  # auto on a bare host: learn the wire before the run line names it
        run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3)
        store.start_run(
            run_id,
            relay_url=collector.relay,
            lexicons={lex.name: lex.sha256 for lex in lexicons},
            options=_run_options(collector.wire.name, options, keep_raw_ids),
        )
        _announce_run(run_id, collector, wire_note, lexicons)
        stats = _collect_until_stopped(collector, progress, lexicons)
        out.print(
            f"stopped ({stats.stop_reason}) after {stats.elapsed_s:,.1f} s: {stats.events:,} events, "
            f"{stats.posts:,} posts, {stats.matched:,} matched, {stats.stored:,} stored "
            f"({stats.duplicates:,} already stored), {stats.malformed:,} malformed frames skipped, "
            f"{stats.failures:,} connection failures; cursor {stats.cursor}"
        )
        _print_summary(store)


def _run_options(wire: str, options, keep_raw_ids: bool) -> dict[str, object]:
    """The run's settings as the store records them with the run (its `runs.options`)."""
    return {
        "wire": wire,
        "langs": list(options.langs),
        "replies": options.replies,
        "duration_s": options.duration_s,
        "max_posts": options.max_posts,
        "keep_raw_ids": keep_raw_ids,
        "batch_size": options.batch_size,
        "rewind_s": options.rewind_s,
    }


def _announce_run(run_id: str, collector, wire_note: str | None, lexicons: list) -> None:
    """On stderr, before the stream starts: a resume note, the run line (wire, relay, cursor, lexicons), the recall."""
    from mhaudit.weak_supervision.lexicons.measured import recall_sentence

    if collector.resume_note:
        err.print(f"note: {collector.resume_note}", highlight=False)
    how = f" ({wire_note})" if wire_note else ""
    err.print(
        f"run {run_id}: {collector.wire.name} wire at {collector.relay}{how}, "
        f"{_where(collector, collector.options.rewind_s)}"
        "; lexicons " + ", ".join(f"{lex.name} v{lex.version}" for lex in lexicons),
        highlight=False,
    )
    err.print("recall: " + recall_sentence({lex.name: lex.sha256 for lex in lexicons}), highlight=False)


def _collect_until_stopped(collector, progress, lexicons: list):
    """The collector's run, its stats; Ctrl-C and SIGTERM commit the pending batch and end the run cleanly."""
    previous = {sig: signal.signal(sig, lambda *_: collector.stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with progress.stage(
            f"collect posts ({', '.join(lex.name for lex in lexicons)}) from {collector.relay}",
            total=collector.options.max_posts,
        ):
            return collector.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _check_flags(lexicon: list[str] | None, max_retries: int, rewind: float) -> None:
    if not lexicon:
        raise InputError("name at least one lexicon: --lexicon si, mh, wide or a FILE.toml")
    if max_retries < 1:
        raise InputError(f"--max-retries must be at least 1, not {max_retries}")
    if not rewind >= 0 or rewind == float("inf"):
        raise InputError(f"--rewind must be 0 or more seconds, not {rewind}")


@app.command("summary")
@guarded
def summary(
    db: Annotated[
        str,
        typer.Option(
            "--db", metavar="PATH|URL", help="Post store written by `collect bluesky` (file path or postgresql:// URL)."
        ),
    ],
) -> None:
    """Print the Table-4-like summary of a post store: per category and per day, posts and unique authors."""
    from mhaudit.weak_supervision.collect.store import PostStore

    with PostStore(db, create=False) as store:  # a mistyped --db: one sentence, and no new file
        out.print(f"{store.count():,} posts in {store.location}")
        _print_summary(store)


@app.command("replay")
@guarded
def replay(
    posts: Annotated[
        Path,
        typer.Argument(
            help="A table of posts (.csv, .parquet, .jsonl) with a text and a "
            "createdAt column, e.g. a published data set."
        ),
    ],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 8800,
    since: Annotated[str | None, typer.Option(help="Only posts created on or after this date (UTC).")] = None,
    text_column: Annotated[str, typer.Option(help="Column with the post text.")] = "text",
    time_column: Annotated[str, typer.Option(help="Column with the post's createdAt.")] = "createdAt",
) -> None:
    """Serve a table of posts as a Jetstream /subscribe relay on 127.0.0.1, in createdAt order with compressed
    time, for `collect bluesky --relay` (docs/monitor.md). Post ids come from each post's text and createdAt and
    stream time from the clock, so files replayed one after another into one store are each stored whole, and a
    file replayed again adds nothing. Stops with Ctrl-C."""
    import contextlib

    from mhaudit.weak_supervision.collect.replay import ReplayRelay

    relay = ReplayRelay.from_file(posts, since=since, port=port, text=text_column, created_at=time_column).start()
    out.print(f"replaying {len(relay.events):,} posts at {relay.url} (Ctrl-C stops)", highlight=False)
    with contextlib.suppress(KeyboardInterrupt), ctrl_c_stops():
        relay.wait()
    relay.stop()


def _with_intervals(table):
    """The filter and each proportion as "value (low–high)", for printing."""
    import pandas as pd  # here, not at the top: `mhaudit --help` loads no pandas

    shown = {"filter": table["filter"]}
    for column in ("recall", "keep_share", "precision"):
        if column in table:
            triples = table[[column, f"{column}_ci_low", f"{column}_ci_high"]].to_numpy()
            shown[column.replace("_", " ")] = [
                f"{v:.3f} ({lo:.3f}–{hi:.3f})" if v == v else "n/a" for v, lo, hi in triples
            ]
    return pd.DataFrame(shown)


@app.command("recall")
@guarded
def recall(
    lexicon: Annotated[
        list[str],
        typer.Option(
            "--lexicon",
            metavar="FILTER",
            help="A filter: 'mh', 'si', "
            "'wide', lexicons joined by '+' ('si+mh'), or a lexicon TOML "
            "file; repeat for several (default: mh, si, si+mh, wide, si+mh+"
            "wide).",
        ),
    ] = None,  # type: ignore[assignment]  # None: not given
    data: Annotated[Path, typer.Option(help="The folder of labelled sets (each read in place).")] = Path(
        "../shared/data"
    ),
) -> None:
    """Print what each collection filter keeps of the labelled sets found under --data: recall on the positive
    posts, share of all posts kept and precision of the kept posts, with Wilson 95% CIs (docs/collect.md,
    "Recall of the collection")."""
    from mhaudit.weak_supervision.lexicons.labelled_sets import DEFAULT_FILTERS, LABELLED_SETS, recall_tables

    if not data.is_dir():
        raise InputError("no such folder of labelled sets (give --data, e.g. ../shared/data)", path=data)
    tables, absent = recall_tables(data, lexicon or DEFAULT_FILTERS)
    if not tables:
        raise InputError(
            f"none of the labelled sets is in this folder; expected e.g. {LABELLED_SETS[0].files[0]}", path=data
        )
    for name, table in tables.items():
        spec = next(spec for spec in LABELLED_SETS if spec.name == name)
        what = (
            f"{table['n_positive'].iat[0]:,} {spec.target} by {spec.labels_by}"
            if spec.positive is not None
            else spec.labels_by
        )
        print_table(f"{name}: {table['n_posts'].iat[0]:,} posts, {what}", _with_intervals(table))
        if tuned := list(table.loc[table["tuned_here"], "filter"]):
            out.print(
                f"note: {', '.join(tuned)} {'was' if len(tuned) == 1 else 'were'} tuned on posts of this set, so "
                "the recall here is optimistic; the held-out half judges it",
                highlight=False,
            )
    if absent:
        out.print("not found under " + str(data) + ": " + ", ".join(absent), highlight=False)
