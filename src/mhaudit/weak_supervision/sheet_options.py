"""How an annotation sheet is read and what a reader returns, shared by the mhaudit sheet reader (`sheets`) and
the Label Studio and Argilla readers (`annotation_exports`): the import's `Options`, the `ChoiceMap` that maps an
answer to 0/1 (a choice that maps to neither is an error naming it, never a silent drop), and `SheetRows`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mhaudit.core.errors import InputError
from mhaudit.tables.io import is_missing

DEFAULT_POSITIVE = ("1", "positive", "yes", "true", "pos")
DEFAULT_NEGATIVE = ("0", "negative", "no", "false", "neg")


@dataclass
class ChoiceMap:
    positive: set[str] = field(default_factory=lambda: set(DEFAULT_POSITIVE))
    negative: set[str] = field(default_factory=lambda: set(DEFAULT_NEGATIVE))

    @classmethod
    def with_extra(cls, positive: Iterable[str] = (), negative: Iterable[str] = ()) -> ChoiceMap:
        choices = cls()
        choices.positive |= {p.strip().lower() for p in positive}
        choices.negative |= {n.strip().lower() for n in negative}
        both = choices.positive & choices.negative
        if both:
            raise InputError(f"choice '{sorted(both)[0]}' is given as both positive and negative")
        return choices

    def value(self, choice: object, where: str) -> int:
        if isinstance(choice, (bool, int, float)) and choice in (0, 1):
            return int(choice)
        if isinstance(choice, list):
            if len(choice) != 1:
                raise InputError(f"{where}: expected one label choice, found {len(choice)} ({choice!r})")
            return self.value(choice[0], where)
        text = str(choice).strip().lower()
        if text in self.positive:
            return 1
        if text in self.negative:
            return 0
        raise InputError(
            f"{where}: label choice {choice!r} is neither positive ({', '.join(sorted(self.positive))}) "
            f"nor negative ({', '.join(sorted(self.negative))}); map it with --positive or --negative"
        )


@dataclass
class Options:
    labeler: str | None = None  # fills a missing labeler; for LS/Argilla: the name of the one annotator imported
    task: str | None = None  # fills a missing task
    kind: str = "human"
    user: str | None = None  # LS/Argilla: import only this annotator (user id / completed_by)
    label_field: str = "label"
    tags_field: str = "tags"
    note_field: str = "note"
    id_field: str = "item_id"
    choices: ChoiceMap = field(default_factory=ChoiceMap)


@dataclass
class SheetRows:
    rows: list[dict]
    skipped: int = 0  # rows / annotations without a label


def is_blank(value: object) -> bool:
    """A cell without a value: missing, or text of spaces only."""
    return is_missing(value) or (isinstance(value, str) and value.strip() == "")


def text_or_none(value: object) -> str | None:
    """A cell as text, None where it is blank."""
    return None if is_blank(value) else str(value)
