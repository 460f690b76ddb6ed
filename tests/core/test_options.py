"""An option declared once (mhaudit.core.options): its rule says in words what a good value is, a bad value is
one sentence naming the field, and a tuple field takes one string as one item; the flags made from it
(mhaudit.cli.options) split comma-separated values and parse each one."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mhaudit.cli.options import flags, options_from
from mhaudit.core.errors import InputError
from mhaudit.core.options import at_least, between, check, each, one_of, option


def _pair(text: str) -> tuple[str, str]:
    left, _, right = text.partition(":")
    return left, right


@dataclass(frozen=True)
class Made:
    names: tuple[str, ...] = option(help="Names.")
    share: float = option(0.1, help="A share.", rule=between(0, 1))
    level: float = option(0.5, help="A level.", rule=between(0.5, 1, low_open=False, high_open=False))
    gap: float = option(0.1, help="A gap.", rule=between(0, 1, high_open=False))
    count: int = option(5, help="A count.", rule=at_least(2))
    kind: str = option("a", help="A kind.", rule=one_of("a", "b"))
    ks: tuple[int, ...] = option((5, 10), help="Ks.", rule=each(at_least(1)))
    pairs: tuple[tuple[str, str], ...] = option((), help="Pairs.", parse=_pair)
    note: str | None = option(None, help="A note.")

    def __post_init__(self) -> None:
        check(self)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(share=1.0), "share 1.0 must be strictly between 0 and 1"),
        (dict(level=0.4), "level 0.4 must be between 0.5 and 1"),
        (dict(gap=0), "gap 0 must be in (0, 1]"),
        (dict(count=1), "count 1 must be at least 2"),
        (dict(kind="c"), "kind 'c' must be one of a, b"),
        (dict(ks=(3, 0)), "ks 3, 0 must each be at least 1"),
    ],
)
def test_a_bad_value_is_one_sentence_naming_the_field(change, message):
    with pytest.raises(InputError) as error:
        Made(names=("x",), **change)
    assert str(error.value) == message


def test_the_bounds_themselves():
    assert Made(names=("x",), level=0.5, gap=1).level == 0.5
    assert Made(names=("x",), level=1.0).level == 1.0


def test_a_string_or_a_list_for_a_tuple_field():
    assert Made(names="dreaddit").names == ("dreaddit",)  # one item, not its letters
    assert Made(names=["a", "b"], ks=[1, 2]).ks == (1, 2)
    assert Made(names=["a", "b"]).names == ("a", "b")


def test_flags_are_the_fields_dashed_and_their_values_make_the_options():
    assert [f.flag for f in flags(Made)] == [
        "--names",
        "--share",
        "--level",
        "--gap",
        "--count",
        "--kind",
        "--ks",
        "--pairs",
        "--note",
    ]
    made = options_from(
        Made, {"names": ["a,b", "c"], "ks": ["1,2"], "pairs": ["m:reddit"], "count": 3, "share": 0.2, "note": None}
    )
    assert made == Made(names=("a", "b", "c"), ks=(1, 2), pairs=(("m", "reddit"),), count=3, share=0.2)
    assert options_from(Made, {"names": ["a"], "ks": ()}).ks == (5, 10)  # a repeatable flag left unset: the default
    with pytest.raises(InputError, match="--ks takes int values, got x"):
        options_from(Made, {"names": ["a"], "ks": ["x"]})
