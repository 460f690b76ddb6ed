"""`mhaudit label ...`."""

from __future__ import annotations

import typer

app = typer.Typer(help="TODO", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="label")
