"""docs/cli.md lists every command of the app, old names included; the groups follow its rule."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from mhaudit.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _commands(group, prefix: str = "") -> dict[str, bool]:
    """Every command path ('audit cpfe', 'estimate') and whether it is hidden (an old name)."""
    found = {}
    for name, command in group.commands.items():
        path = f"{prefix} {name}".strip()
        if hasattr(command, "commands"):
            found |= {p: hidden or command.hidden for p, hidden in _commands(command, path).items()}
        else:
            found[path] = command.hidden
    return found


COMMANDS = _commands(typer.main.get_command(app))


def test_every_command_is_in_docs_cli_md():
    listed = set(re.findall(r"`mhaudit ([a-z][a-z -]*?)(?: --[a-z-]+)?`", DOC.read_text()))
    missing = sorted(set(COMMANDS) - listed)
    assert not missing, f"commands missing from docs/cli.md: {missing}"
    stale = sorted(listed - set(COMMANDS))
    assert not stale, f"docs/cli.md lists commands the app does not have: {stale}"


def test_old_names_are_in_the_aliases_table_and_hidden():
    table = DOC.read_text().split("## Old names", 1)[1]
    old = sorted(path for path, hidden in COMMANDS.items() if hidden)
    assert old and all(f"`mhaudit {path}`" in table for path in old)
    before = DOC.read_text().split("## Old names", 1)[0]
    assert not any(f"`mhaudit {path}`" in before for path in old)


def test_the_seven_audits_are_one_group():
    audits = {path.split()[1] for path, hidden in COMMANDS.items() if path.startswith("audit ") and not hidden}
    assert audits == {"cpfe", "divergence", "agreement", "model-selection", "estimate", "certify", "monitor"}
    groups = {path.split()[0] for path, hidden in COMMANDS.items() if " " in path and not hidden}
    assert groups == {"audit", "data", "labels", "collect", "report", "cache"}
