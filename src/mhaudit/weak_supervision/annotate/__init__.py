"""`mhaudit annotate`: a local web app where annotators label a validation sample and an adjudicator
resolves their disagreements (docs/annotation.md).

    session = open_session("sample.parquet", "labels.sqlite", ["alice", "bob"], adjudicator="carol")
    for person, url in session.urls().items(): print(person.name, url)   # None: link unchanged
    session.server.serve_forever()

Every answer is written to the label store, and synced to disk, before the server acknowledges it (kind
'human', labeler = annotator name; several people at once and a killed server: docs/faults.md); consensus
labels are kind 'adjudicated', labeler 'consensus'. Annotators see neither the weak label nor each
other's answers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import LabelStore
from mhaudit.weak_supervision.annotate.adjudication import (
    ADJUDICATED,
    AGREED,
    CONSENSUS,
    TAGS,
    Case,
    agreed_rows,
    build_cases,
    summary,
)
from mhaudit.weak_supervision.annotate.app import AnnotationApp, Settings
from mhaudit.weak_supervision.annotate.sample import Item, load_sample
from mhaudit.weak_supervision.annotate.server import AnnotationServer
from mhaudit.weak_supervision.annotate.tokens import Person, TokenFile, check_name, tokens_path
from mhaudit.weak_supervision.sheets import check_labeler_kinds

__all__ = [
    "ADJUDICATED",
    "AGREED",
    "CONSENSUS",
    "TAGS",
    "AnnotationApp",
    "AnnotationServer",
    "Case",
    "Item",
    "Person",
    "Session",
    "TokenFile",
    "agreed_rows",
    "build_cases",
    "load_sample",
    "open_session",
    "progress",
    "summary",
    "tokens_path",
]


@dataclass
class Session:
    server: AnnotationServer
    app: AnnotationApp
    store: LabelStore
    people: list[Person]
    issued: dict[Person, str | None]  # the new tokens of this run; None: the person's earlier link still works
    tokens: TokenFile
    thread: threading.Thread | None = None

    def urls(self) -> dict[Person, str | None]:
        return {p: (self.server.url_for(t) if t else None) for p, t in self.issued.items()}

    def start_background(self) -> Session:
        """Serve from a daemon thread (tests, notebooks); `close()` stops it."""
        self.thread = self.server.start_background()
        return self

    def close(self) -> None:
        if self.thread is not None:
            self.server.shutdown()
            self.thread.join()
            self.thread = None
        self.server.server_close()
        self.store.close()


def _people(annotators: list[str], adjudicator: str | None) -> list[Person]:
    if not annotators:
        raise InputError("name at least one --annotator")
    names = [check_name(n) for n in annotators]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise InputError(f"annotator '{duplicate}' is named twice")
    people = [Person(n, "annotator") for n in names]
    if adjudicator is not None:
        if len(names) < 2:
            raise InputError("an --adjudicator needs at least two annotators to have disagreements to resolve")
        adjudicator = check_name(adjudicator)
        if adjudicator in names:
            raise InputError(
                f"'{adjudicator}' is named as an annotator and as the adjudicator; the adjudicator "
                "resolves the annotators' disagreements and must be someone else"
            )
        people.append(Person(adjudicator, "adjudicator"))
    return people


def open_session(
    sample: str | Path,
    labels: str | Path,
    annotators: list[str],
    adjudicator: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    public: bool = False,
    new_tokens: bool = False,
    keep_order: bool = False,
    guidelines: str | Path | None = None,
    notify: Callable[[str], None] | None = None,
    log_requests: bool = False,
    posts: str | Path | None = None,
) -> Session:
    """Check everything, bind the port, issue tokens; the caller serves (`server.serve_forever()`) and closes.
    `posts`: the post store that holds the texts of a sample of post ids (see `load_sample`)."""
    people = _people(annotators, adjudicator)
    items = load_sample(sample, keep_order=keep_order, posts=posts)
    AnnotationServer.check_host(host, public)
    with ExitStack() as undo:  # on any error: close what was opened
        store = LabelStore(labels, durable=True)  # an answer acknowledged to a person is on disk
        undo.callback(store.close)
        # an annotator's name must not already belong to a model or lexicon labeler (their labels would be replaced)
        check_labeler_kinds(
            store,
            [{"labeler": p.name, "kind": "human"} for p in people if p.role == "annotator"]
            + [{"labeler": CONSENSUS, "kind": ADJUDICATED}],
            advice="choose another name so that no label is overwritten",
        )
        server = AnnotationServer(None, host, port, public=public)
        undo.callback(server.server_close)
        tokens = TokenFile(tokens_path(labels))
        issued = tokens.issue(people, rotate=new_tokens)
        settings = Settings(
            annotators=[p.name for p in people if p.role == "annotator"], notify=notify, log_requests=log_requests
        )
        server.app = AnnotationApp(items, store, tokens.resolver(people), settings, guidelines=guidelines)
        undo.pop_all()
    return Session(server=server, app=server.app, store=store, people=people, issued=issued, tokens=tokens)


def progress(session: Session) -> dict:
    """Labelled items per annotator and the adjudication counts, for the CLI's closing summary."""
    app = session.app
    per_person = {name: len(app.labelled(name) & app.by_key.keys()) for name in app.settings.annotators}
    return {"items": len(app.items), "labelled": per_person, **summary(app.cases(), app.settings.annotators)}
