"""What every report ends with, in Markdown and in HTML: the notes, the mhaudit version and when it ran, the inputs
by file name with the start of their SHA-256 (report.json keeps the paths), and the options."""

from __future__ import annotations

import html
import json
import re

from mhaudit import __version__
from mhaudit.report.result import AuditResult


def _run_line(result: AuditResult) -> str:
    created = result.provenance.get("created") or "at a time not recorded"
    return f"mhaudit {__version__}, run {created}."


_FOLDERS = re.compile(r"[^\s:]*[/\\]")  # the folders of a path ("Cross-platform: /a/b/x.csv" keeps its label)


def _inputs(result: AuditResult) -> list[tuple[str, str]]:
    """Each input by its file name (report.json keeps the paths) and the start of its SHA-256; a scored model
    ("model hf:org/name seed 0, huggingface") keeps its whole name."""
    return [(_shown(name), digest[:12]) for name, digest in result.provenance.get("inputs", {}).items()]


def _shown(name: str) -> str:
    head, model, rest = name.partition("model ")
    return _FOLDERS.sub("", head) + model + rest


def _options_text(options: dict, indent: str = "") -> str:
    """One line per option, "name: value" (a list on its line, in JSON); a combined report's audits nested."""
    return "\n".join(
        f"{indent}{name}:\n{_options_text(value, indent + '  ')}"
        if isinstance(value, dict) and value
        else f"{indent}{name}: {json.dumps(value, default=str)}"
        for name, value in sorted(options.items())
    )


def markdown_footer(result: AuditResult) -> list[str]:
    """Notes, the run, and the inputs and options collapsed (GitHub renders <details> in Markdown)."""
    out = ["---", ""]
    if result.notes:
        out += ["Notes:", "", *(f"- {note}" for note in result.notes), ""]
    inputs = _inputs(result)
    out += [
        _run_line(result),
        "",
        f"<details><summary>Inputs ({len(inputs)}) and options</summary>",
        "",
        *(f"- `{name}` sha256 {digest}" for name, digest in inputs),
        "",
        "```text",
        _options_text(result.options),
        "```",
        "",
        "</details>",
    ]
    return out


def html_footer(result: AuditResult) -> str:
    esc = html.escape
    notes = "".join(f"<li>{esc(note)}</li>" for note in result.notes)
    inputs = _inputs(result)
    return (
        "<footer>"
        + (f"<p><b>Notes</b></p><ul class='notes'>{notes}</ul>" if notes else "")
        + f"<p>{esc(_run_line(result))}</p>"
        + f"<details><summary>Inputs ({len(inputs)}), with the start of each SHA-256</summary><ul>"
        + "".join(f"<li>{esc(name)} sha256 {digest}</li>" for name, digest in inputs)
        + "</ul></details>"
        + f"<details><summary>Options</summary><pre>{esc(_options_text(result.options))}</pre></details>"
        + "</footer>"
    )
