"""`mhaudit cache info|clear`: the parse cache's size, and removing it (mhaudit.text.parse_cache)."""

from __future__ import annotations

import typer

from mhaudit.cli.console import guarded, out

app = typer.Typer(help="The parse cache (spaCy parses of every text seen, keyed by content).", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="cache")


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


@app.command()
@guarded
def info() -> None:
    """Where the parse cache is, how large, and how many texts it holds per parser."""
    from mhaudit.text.parse_cache import cache_report

    report = cache_report()
    if not report["texts"]:
        out.print(f"parse cache {report['path']}: empty", highlight=False)
    else:
        models = ", ".join(f"{model}: {n:,}" for model, n in report["models"].items())
        out.print(
            f"parse cache {report['path']}: {report['texts']:,} texts, {report['tokens']:,} tokens, "
            f"{_size(report['bytes'])} ({models})",
            highlight=False,
            soft_wrap=True,
        )
    if report["legacy_files"]:
        out.print(
            f"{report['legacy_files']:,} Parquet files beside it are an older mhaudit's parse cache, which "
            "this one never reads; mhaudit cache clear removes them",
            highlight=False,
            soft_wrap=True,
        )


@app.command()
@guarded
def clear() -> None:
    """Remove the parse cache; the next audit parses its texts again."""
    from mhaudit.text.parse_cache import cache_path, clear_cache

    freed = clear_cache()
    out.print(
        f"removed the parse cache under {cache_path().parent}: freed {_size(freed)}", highlight=False, soft_wrap=True
    )
