"""An audit's flags, made from its options dataclass (mhaudit.core.options). A command declares a parameter
`options` and `@with_options("module:<Name>Options")` replaces it with one flag per field, carrying the field's
default, help and name; the command receives the options those flags make, checked where they are made. A field
holding another options dataclass (the trust cut-offs) gives its own fields as flags."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import types
import typing
from typing import Annotated, Any

import typer

from mhaudit.cli.console import guarded
from mhaudit.core.errors import InputError
from mhaudit.core.options import described

_KEYWORD = inspect.Parameter.KEYWORD_ONLY


@dataclasses.dataclass(frozen=True)
class Flag:
    """One field of an options dataclass as a command-line parameter (`hint`: the field's type)."""

    field: dataclasses.Field
    hint: Any

    @property
    def name(self) -> str:
        return self.field.name

    @property
    def flag(self) -> str:
        return "--" + (self.field.metadata["flag"] or self.name.replace("_", "-"))

    @property
    def element(self) -> type | None:
        """The element type of a tuple field (a flag that repeats), else None."""
        bare = _bare(self.hint)
        return typing.get_args(bare)[0] if typing.get_origin(bare) is tuple else None

    def parameter(self) -> inspect.Parameter:
        help_text, default = self.field.metadata["help"], self.field.default
        required = default is dataclasses.MISSING
        if self.element is None:
            names = f"{self.flag}/--no-{self.flag[2:]}" if self.hint is bool else self.flag
            return inspect.Parameter(
                self.name,
                _KEYWORD,
                default=... if required else default,
                annotation=Annotated[self.hint, typer.Option(names, help=help_text)],
            )
        shown = ", ".join(map(str, default)) if isinstance(default, tuple) and default else False
        option = typer.Option(self.flag, help=help_text, show_default=shown or False)
        return inspect.Parameter(
            self.name,
            _KEYWORD,
            default=... if required else None,
            annotation=Annotated[list[str] if required else list[str] | None, option],
        )

    def value(self, given: Any) -> Any:
        """The field's value from what the flag got (a tuple from repeated or comma-separated values)."""
        if self.element is None or not given:  # click gives () for a repeatable flag left unset: the default
            return given if self.element is None else None
        parse = self.field.metadata["parse"] or self.element
        split = self.field.metadata["split"]
        items = [
            item.strip()
            for value in given
            for item in (str(value).split(",") if split else [str(value)])
            if item.strip()
        ]
        try:
            return tuple(parse(item) for item in items)
        except ValueError:
            raise InputError(f"{self.flag} takes {self.element.__name__} values, got {', '.join(items)}") from None


def flags(options_type: type) -> list[Flag]:
    """The command-line flags of `options_type`, nested options dataclasses flattened into their fields."""
    hints = typing.get_type_hints(options_type)
    found = []
    for field in described(options_type):
        if dataclasses.is_dataclass(hints[field.name]):
            found += flags(hints[field.name])
        elif field.metadata["cli"]:
            found.append(Flag(field, hints[field.name]))
    return found


def options_from(options_type: type, values: dict[str, Any]) -> Any:
    """`options_type` made from the flags' values (by field name); a repeatable flag left unset keeps the field's
    default."""
    hints = typing.get_type_hints(options_type)
    kwargs = {}
    for field in described(options_type):
        if dataclasses.is_dataclass(hints[field.name]):
            kwargs[field.name] = options_from(hints[field.name], values)
        elif field.name in values:
            flag = Flag(field, hints[field.name])
            value = flag.value(values[field.name])
            if value is not None or flag.element is None:
                kwargs[field.name] = value
    return options_type(**kwargs)


def with_options(options_path: str):
    """The command, its `options` parameter replaced by the flags of the options class at `options_path`
    ('module:Class'), and guarded (cli.console.guarded: a bad value is one sentence, exit 2). The class is
    imported when typer builds the command, so `mhaudit --help` imports no audit."""
    return lambda command: OptionsCommand(command, options_path)


class OptionsCommand:
    """A command whose signature typer reads (`__signature__`, `__annotations__`) is made from an options class
    on first use: the command's own parameters, then one keyword per flag."""

    def __init__(self, command, options_path: str):
        self.command, self.options_path = command, options_path
        self.__name__, self.__doc__, self.__module__ = command.__name__, command.__doc__, command.__module__

    @functools.cached_property
    def options_type(self) -> type:
        module, name = self.options_path.split(":")
        return getattr(importlib.import_module(module), name)

    @functools.cached_property
    def _own(self) -> list[inspect.Parameter]:
        """The command's own parameters, without `options`."""
        hints = typing.get_type_hints(self.command, include_extras=True)
        return [
            p.replace(kind=_KEYWORD, annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(self.command).parameters.values()
            if p.name != "options"
        ]

    @functools.cached_property
    def _parameters(self) -> list[inspect.Parameter]:
        own, made = self._own, [f.parameter() for f in flags(self.options_type)]
        clash = {p.name for p in own} & {p.name for p in made}
        assert not clash, f"{self.__name__}: {clash} are also fields of {self.options_type.__name__}"
        return own + made

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.Signature(self._parameters)

    @property
    def __annotations__(self) -> dict:  # type: ignore[override]  # read-only on purpose: inspect reads it
        return {p.name: p.annotation for p in self._parameters}

    def listed(self):
        """The command as a listing shows it (cli._app_for): its name, help and own parameters, without the flags, so
        its options class is not imported. It is never run."""

        def listed(**kwargs):
            raise AssertionError(f"{self.__name__} was built for a listing only")

        listed.__name__, listed.__doc__ = self.__name__, self.__doc__
        setattr(listed, "__signature__", inspect.Signature(self._own))  # what typer reads (functions have no slot)
        listed.__annotations__ = {p.name: p.annotation for p in self._own}
        return listed

    def __call__(self, **kwargs):
        values = {f.name: kwargs.pop(f.name) for f in flags(self.options_type)}
        return _run(self.command, self.options_type, values, kwargs)


@guarded
def _run(command, options_type: type, values: dict, kwargs: dict):
    """The command with the options its flags make (inside the guard: a bad value is one sentence)."""
    return command(**kwargs, options=options_from(options_type, values))


def _bare(hint: Any) -> Any:
    """`X | None` as X."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint
