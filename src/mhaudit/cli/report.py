"""`mhaudit report combine DIR... --out DIR`: several audits' reports of the same models as one trust report
(mhaudit.report.combine). Heavy modules are imported inside the command, so `mhaudit --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli.console import guarded, out, write_report
from mhaudit.core.errors import InputError

app = typer.Typer(help="Work with written reports: combine several audits into one trust report.", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="report")


@app.command()
@guarded
def combine(
    folders: Annotated[list[Path], typer.Argument(help="Report folders written by mhaudit audits (--out).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the combined report.")],
    title: Annotated[str | None, typer.Option(help="The combined report's title.")] = None,
) -> None:
    """Merge the reports of several audits (cross-platform, label source, validation, ...) into one."""
    from mhaudit.report.combine import combine_results, read_report

    if any(folder.resolve() == out_dir.resolve() for folder in folders):
        raise InputError(
            "is one of the reports to combine; write the combined report to another folder so the input report is kept",
            path=out_dir,
        )
    results = [read_report(folder) for folder in folders]
    combined = combine_results(results, title=title)
    write_report(combined, out_dir)
    out.print(combined.summary.split("\n\n")[0])
    out.print(f"combined report of {len(results)} audits: {out_dir / 'report.html'} (also .md and .json)")
