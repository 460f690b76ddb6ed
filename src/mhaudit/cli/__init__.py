"""The `mhaudit` command line: one thin module per command group, each a wrapper over a library function.
Every audit is a command of `mhaudit audit`; the tables have one noun group each (`data`, `labels`, `collect`);
docs/cli.md lists every command.

Exit codes: 0 success; 2 bad input or usage (one sentence on stderr, no traceback); 1 an unexpected
internal error (a bug: please report it with the traceback). Heavy modules are imported inside the
commands, so `mhaudit --help` stays fast.
"""

from __future__ import annotations

import copy
import sys
from typing import Annotated

import typer

from mhaudit.cli import (
    agreement,
    annotate,
    audit,
    cache,
    collect,
    data,
    demo,
    estimate,
    explain,
    labels,
    llm_labels,
    model_selection,
    models,
    monitor,
    report,
)
from mhaudit.cli.console import many_values
from mhaudit.cli.options import OptionsCommand

app = typer.Typer(
    help="Audit mental-health text classifiers across platforms and label sources.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# registration order is the order of `mhaudit audit --help` and the other groups
for group in (
    demo,
    data,
    models,
    explain,
    audit,
    agreement,
    model_selection,
    estimate,
    monitor,
    report,
    collect,
    labels,
    llm_labels,
    annotate,
    cache,
):
    group.register(app)
many_values(app)


def _print_version(asked: bool) -> None:
    if asked:
        from mhaudit import __version__

        typer.echo(f"mhaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print mhaudit's version and exit."),
    ] = False,
) -> None:
    """The root's own options (the app's help is its `help=` above)."""


def main() -> None:
    _app_for(sys.argv[1:])()


def _app_for(argv: list[str]) -> typer.Typer:
    """The root app with only the group `argv` names first, and in it only the command named second: typer builds
    every command of the app it runs (~0.03 s for the 44 here), and an audit's flags import its options and so the
    audit (~1 s for all seven). For anything else (a root command, an option, nothing, a group's listing) the whole
    app or group, its audits listed without their flags (`listing`), so --help and the errors read as before."""
    groups = [group for group in app.registered_groups if argv and group.name == argv[0]]
    if len(groups) != 1 or (sub := groups[0].typer_instance) is None:
        return listing(app)
    commands = [c for c in sub.registered_commands if len(argv) > 1 and _name(c) == argv[1]]
    group = copy.copy(groups[0])
    if len(commands) == 1:
        group.typer_instance = sub = copy.copy(sub)
        sub.registered_commands, sub.registered_groups = commands, []
    else:
        group.typer_instance = listing(sub)
    one = copy.copy(app)
    one.registered_groups, one.registered_commands = [group], []
    return one


def listing(root: typer.Typer) -> typer.Typer:
    """A copy of `root` whose option-made commands (cli.options.OptionsCommand) carry their own parameters only: a
    listing shows a command's name and help, and never runs it."""
    one = copy.copy(root)
    one.registered_commands = [copy.copy(c) for c in root.registered_commands]
    for command in one.registered_commands:
        if isinstance(command.callback, OptionsCommand):
            command.callback = command.callback.listed()
    one.registered_groups = [copy.copy(g) for g in root.registered_groups]
    for group in one.registered_groups:
        group.typer_instance = listing(group.typer_instance) if group.typer_instance else None
    return one


def _name(command: typer.models.CommandInfo) -> str:
    """The name a registered command is called by (typer's own rule for an unnamed one)."""
    return command.name or typer.main.get_command_name(getattr(command.callback, "__name__", ""))
