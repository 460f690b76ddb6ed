"""The annotation app's state and pages: the sample, the label store, who holds which token, the Jinja2
templates and the guidelines; what each page shows and what each JSON call writes (docs/annotation.md).

`mhaudit.weak_supervision.annotate.server` routes the HTTP requests here. A request the app refuses raises
`HTTPError` with the status and the sentence the person sees.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markdown_it import MarkdownIt

from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import LabelStore
from mhaudit.weak_supervision.annotate.adjudication import (
    ADJUDICATED,
    CONSENSUS,
    TAGS,
    agreed_rows,
    answer_from_row,
    build_cases,
    summary,
)
from mhaudit.weak_supervision.annotate.sample import Item
from mhaudit.weak_supervision.annotate.tokens import Person

HERE = Path(__file__).resolve().parent
GUIDELINES = HERE / "guidelines" / "binary.md"
MAX_NOTE = 2000
TAG_KEYS = dict(zip(TAGS, ("a", "p", "m", "s", "i", "c", "w", "h"), strict=True))
TASK_HINTS = {
    "si": "SI: 1 when the writer says they themselves think about, wish for or plan their own death or self-harm.",
    "mh": "MH: 1 when the writer says they themselves are going through depression, anxiety, panic, "
    "insomnia or similar distress, or seek help for it.",
}


class HTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Settings:
    annotators: list[str]
    notify: Callable[[str], None] | None = None  # CLI-side messages (unknown token, internal errors)
    log_requests: bool = False  # method, route without token, status


class AnnotationApp:
    """Everything a request needs: the sample, the label store, who holds which token, the pages."""

    def __init__(
        self,
        items: list[Item],
        store: LabelStore,
        resolver: Callable[[str], Person | None],
        settings: Settings,
        *,
        guidelines: str | Path | None = None,
    ):
        if not items:
            raise InputError("the sample has no items")
        self.items = items
        self.by_key = {item.key: item for item in items}
        self.store = store
        self.resolve = resolver
        self.settings = settings
        self.tasks = sorted({item.task for item in items})
        path = Path(guidelines) if guidelines else GUIDELINES
        if not path.exists():
            raise InputError("no such guidelines file", path=path)
        markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
        self.guidelines_html = markdown.render(path.read_text(encoding="utf-8"))
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._last_notice = 0.0
        self._notice_lock = threading.Lock()
        # Every write to the store goes through this lock, and a consensus is written in the same critical
        # section as the check of the annotators' labels it depends on: no answer can change in between.
        self._write_lock = threading.Lock()

    # --- helpers ---------------------------------------------------------------------------------
    def notify(self, message: str, *, throttle: bool = False) -> None:
        if self.settings.notify is None:
            return
        with self._notice_lock:
            if throttle and time.monotonic() - self._last_notice < 2.0:
                return
            self._last_notice = time.monotonic()
        self.settings.notify(message)

    def render(self, template: str, **context) -> str:
        if "base" in context:  # /s/TOKEN/: the page's own token, for the JSON calls (CSRF-lite)
            context["token"] = context["base"].split("/")[2]
        return self.env.get_template(template).render(tags=TAGS, tag_keys=TAG_KEYS, **context)

    def labelled(self, name: str) -> set[tuple[str, str]]:
        return {(task, item_id) for task in self.tasks for item_id in self.store.labelled(task, name)}

    def resume_position(self, name: str) -> int | None:
        done = self.labelled(name)
        return next((item.position for item in self.items if item.key not in done), None)

    def cases(self):
        return build_cases(
            self.items, self.store.frame(kind="human"), self.store.frame(labeler=CONSENSUS), self.settings.annotators
        )

    def item_at(self, raw: str) -> Item:
        # ASCII digits only: str.isdigit() also accepts '²', which int() refuses
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 9) or not 1 <= int(raw) <= len(self.items):
            raise HTTPError(404, f"there is no such item; the sample has {len(self.items)} items")
        return self.items[int(raw) - 1]

    def item_from(self, body: dict) -> Item:
        key = (body.get("task"), body.get("item_id"))
        if not all(isinstance(k, str) for k in key) or key not in self.by_key:
            raise HTTPError(400, "this item is not in the sample")
        return self.by_key[key]

    @staticmethod
    def answer_from(body: dict) -> tuple[int, list[str], str | None]:
        value = body.get("value")
        if type(value) is not int or value not in (0, 1):
            raise HTTPError(400, "the label must be 0 or 1")
        tags = body.get("tags", [])
        if not isinstance(tags, list) or any(t not in TAGS for t in tags):
            raise HTTPError(400, f"tags must be a list drawn from: {', '.join(TAGS)}")
        tags = [t for t in TAGS if t in tags]
        note = body.get("note")
        if note is not None and not isinstance(note, str):
            raise HTTPError(400, "the note must be text")
        note = (note or "").strip() or None
        if note is not None and len(note) > MAX_NOTE:
            raise HTTPError(400, f"the note is longer than {MAX_NOTE} characters")
        return value, tags, note

    # --- pages -----------------------------------------------------------------------------------
    def item_page(self, person: Person, base: str, item: Item) -> str:
        mine = self.store.frame(item_id=item.item_id, task=item.task, labeler=person.name)
        answer = None if mine.empty else answer_from_row(mine.iloc[0].to_dict())
        n_done = len(self.labelled(person.name) & self.by_key.keys())
        n = len(self.items)
        prev_url = f"{base}item/{item.position - 1}" if item.position > 1 else ""
        next_url = f"{base}item/{item.position + 1}" if item.position < n else f"{base}done"
        return self.render(
            "item.html",
            person=person,
            base=base,
            item=item,
            n=n,
            answer=answer,
            n_done=n_done,
            prev_url=prev_url,
            next_url=next_url,
            hint=TASK_HINTS.get(
                item.task.lower(), "1 only for an explicit, self-directed disclosure; 0 otherwise (see the guidelines)."
            ),
        )

    def adjudication_page(self, person: Person, base: str) -> str:
        cases = self.cases()
        annotators = self.settings.annotators
        disagreements = sorted((c for c in cases if c.disagreement), key=lambda c: (c.resolved, c.item.position))
        return self.render(
            "adjudicate.html",
            person=person,
            base=base,
            annotators=annotators,
            cases=disagreements,
            stats=summary(cases, annotators),
            n_agreed_pending=len(agreed_rows(cases, annotators)),
        )

    # --- API -------------------------------------------------------------------------------------
    def save_label(self, person: Person, body: dict, base: str) -> dict:
        if person.role != "annotator":
            raise HTTPError(403, "only annotators label items")
        item = self.item_from(body)
        value, tags, note = self.answer_from(body)
        latency = body.get("elapsed_ms")
        latency = float(latency) if isinstance(latency, (int, float)) and 0 <= latency < 1e9 else None
        with self._write_lock:
            self.store.add(
                [
                    {
                        "item_id": item.item_id,
                        "task": item.task,
                        "labeler": person.name,
                        "kind": "human",
                        "value": value,
                        "tags": tags,
                        "note": note,
                        "latency_ms": latency,
                    }
                ],
                replace=True,
            )
        following = item.position + 1 if item.position < len(self.items) else self.resume_position(person.name)
        return {"ok": True, "next": f"{base}item/{following}" if following else f"{base}done"}

    def save_consensus(self, person: Person, body: dict) -> dict:
        if person.role != "adjudicator":
            raise HTTPError(403, "only the adjudicator records consensus labels")
        item = self.item_from(body)
        value, tags, note = self.answer_from(body)
        with self._write_lock:
            case = next(c for c in self.cases() if c.item.key == item.key)
            if not case.disagreement:
                raise HTTPError(409, "the annotators no longer disagree on this item; reload the page")
            self.store.add(
                [
                    {
                        "item_id": item.item_id,
                        "task": item.task,
                        "labeler": CONSENSUS,
                        "kind": ADJUDICATED,
                        "value": value,
                        "raw_answer": ADJUDICATED,
                        "tags": tags,
                        "note": note,
                    }
                ],
                replace=True,
            )
        return {"ok": True}

    def save_agreed(self, person: Person) -> dict:
        if person.role != "adjudicator":
            raise HTTPError(403, "only the adjudicator records consensus labels")
        with self._write_lock:
            rows = agreed_rows(self.cases(), self.settings.annotators)
            written = self.store.add(rows, replace=True) if rows else 0
        return {"ok": True, "written": written}
