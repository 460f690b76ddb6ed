"""How `mhaudit labels combine` combines weak labelers, declared once (core.options): the command's flags and
`combine_labels`'s options are made from these fields."""

from __future__ import annotations

from dataclasses import dataclass

from mhaudit.core.errors import InputError
from mhaudit.core.options import at_least, check, one_of, option
from mhaudit.stats.label_model import METHODS

__all__ = ["CombineOptions", "SOURCE_KINDS", "ABSTAIN_ON_ZERO"]

SOURCE_KINDS = ("llm", "lexicon", "model")  # weak labelers; people's labels are what a combined label is judged by
# kinds whose 0 means "did not fire" (a lexicon's 0: no term matched), read as abstaining unless --zero-votes
ABSTAIN_ON_ZERO = ("lexicon",)


@dataclass(frozen=True)
class CombineOptions:
    """Which weak labelers of a task are combined, how, and under what name."""

    labelers: tuple[str, ...] = option(
        help="A weak labeler to combine (kind llm, lexicon or model; full or short name); two or more.",
        flag="labeler",
    )
    method: str = option(
        "dawid-skene",
        help="Label model: majority (vote shares), dawid-skene (a confusion matrix per source, learnt by EM) or "
        "label-model (the triplet method; binary, three or more sources voting together).",
        rule=one_of(*METHODS),
    )
    name: str | None = option(None, help="Name of the combined labeler (default: combined-<method>).")
    zero_votes: tuple[str, ...] = option(
        (),
        help="A source whose 0 is a vote for class 0; by default a lexicon's 0 (no term matched) is an abstention, "
        "an llm's and a model's 0 a vote.",
        flag="zero-votes",
    )
    max_iter: int = option(200, help="Dawid-Skene: at most this many EM iterations.", rule=at_least(1))
    tol: float = option(
        1e-7, help="Dawid-Skene: stop when the log-likelihood changes by less (relative).", rule=at_least(0)
    )

    def __post_init__(self) -> None:
        check(self)
        if len(self.labelers) < 2:
            shown = f" (--labeler {self.labelers[0]})" if self.labelers else ""
            raise InputError(
                f"combining needs at least two weak labelers, got {len(self.labelers)}{shown}; "
                "give --labeler once per source"
            )
        if self.name is not None and not self.name.strip():
            raise InputError("--name is empty; give the combined labeler a name (default: combined-<method>)")

    @property
    def labeler_name(self) -> str:
        """The combined labeler's name in the labels table."""
        return self.name or f"combined-{self.method}"
