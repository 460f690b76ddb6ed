"""The `mhaudit` command line: one thin module per command group, each a wrapper over a library function.

Exit codes: 0 success; 2 bad input or usage (one sentence on stderr, no traceback); 1 an unexpected
internal error (a bug: please report it with the traceback). Heavy modules are imported inside the
commands, so `mhaudit --help` stays fast.
"""

from __future__ import annotations

import typer

from mhaudit.cli import (annotate, audit, benchmark, cache, collect, data, demo, estimate, explain, label, models, monitor,
                         report, validate)

app = typer.Typer(help="Audit mental-health text classifiers across platforms and label sources.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
for group in (demo, data, models, explain, audit, estimate, monitor, report, collect, label, validate, annotate, benchmark,
              cache):
    group.register(app)


def main() -> None:
    app()
