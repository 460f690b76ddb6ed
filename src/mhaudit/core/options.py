"""Options declared once. Each field of an audit's options dataclass carries its default, its help text, the
rule a good value follows and, rarely, a flag name of its own (`option`); `check` applies the rules when the
options are made. The command's flags (cli/options.py) and the experiment file's schema (experiments/config.py)
are built from the same fields, so the three routes cannot drift apart."""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable
from typing import Any

from mhaudit.core.errors import InputError


@dataclasses.dataclass(frozen=True)
class Rule:
    """What a good value is: `holds(value)`, and the same in words ("at least 2")."""

    holds: Callable[[Any], bool]
    text: str
    each: bool = False  # a rule for every element of a tuple


def at_least(low: float) -> Rule:
    return Rule(lambda v: v >= low, f"at least {low}")


def between(low: float, high: float, *, low_open: bool = True, high_open: bool = True) -> Rule:
    """low < v < high; `low_open=False` / `high_open=False` admit the bound itself."""
    text = (
        f"strictly between {low} and {high}"
        if low_open and high_open
        else f"between {low} and {high}"
        if not (low_open or high_open)
        else f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    )
    return Rule(lambda v: (v > low if low_open else v >= low) and (v < high if high_open else v <= high), text)


def one_of(*choices: Any) -> Rule:
    return Rule(lambda v: v in choices, "one of " + ", ".join(map(str, choices)))


def each(rule: Rule) -> Rule:
    """A rule for every element of a tuple."""
    return Rule(lambda values: all(rule.holds(v) for v in values), rule.text, each=True)


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    rule: Rule | None = None,
    flag: str | None = None,
    parse: Callable[[str], Any] | None = None,
    cli: bool = True,
    split: bool = True,
) -> Any:
    """A field of an options dataclass. `help`: one sentence for --help and the docs; `rule`: what a good value is
    (None passes, for an optional field); `flag`: the command's flag when it is not the field's name dashed (a
    repeatable flag reads better singular: --annotator); `parse`: one command-line value to one element of a tuple
    field (e.g. 'MODEL:PLATFORM' to a pair); `cli=False`: set by the command itself, never a flag; `split=False`: a
    tuple field's flag takes one value each time, commas included (a model spec 'NAME:key=value,key=value')."""
    metadata = {"help": help, "rule": rule, "flag": flag, "parse": parse, "cli": cli, "split": split}
    return dataclasses.field(default=default, metadata=metadata)


def check(options: Any) -> None:
    """Raise one InputError sentence for the first field whose value breaks its rule. A tuple field given one
    string holds that one item (`human="dreaddit"` is `("dreaddit",)`, not its letters), and given a list, the
    same items as a tuple."""
    for name in _tuple_fields(options.__class__):  # not type(options): mypy takes type[Any] as unhashable
        value = getattr(options, name)
        if isinstance(value, (str, list)):
            object.__setattr__(options, name, (value,) if isinstance(value, str) else tuple(value))
    for field in dataclasses.fields(options):
        rule, value = field.metadata.get("rule"), getattr(options, field.name)
        if rule is not None and value is not None and not rule.holds(value):
            shown = (
                ", ".join(map(str, value))
                if isinstance(value, tuple)
                else f"'{value}'"
                if isinstance(value, str)
                else value
            )
            raise InputError(f"{field.name} {shown} must {'each ' if rule.each else ''}be {rule.text}")


@functools.cache
def _tuple_fields(options_type: type) -> tuple[str, ...]:
    """The fields typed `tuple[...]` (or `tuple[...] | None`)."""
    hints = typing.get_type_hints(options_type)
    return tuple(
        name
        for name, hint in hints.items()
        if typing.get_origin(hint) is tuple or any(typing.get_origin(arg) is tuple for arg in typing.get_args(hint))
    )


def described(options_type: type) -> list[dataclasses.Field]:
    """The fields declared with `option` (a help text each), in order."""
    return [f for f in dataclasses.fields(options_type) if "help" in f.metadata]
