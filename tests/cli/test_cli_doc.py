"""docs/cli.md lists every command of the app; the groups follow its rule; the old names are gone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from mhaudit.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _commands(group, prefix: str = "") -> set[str]:
    """Every command path ('audit cpfe', 'demo')."""
    found = set()
    for name, command in group.commands.items():
        path = f"{prefix} {name}".strip()
        found |= _commands(command, path) if hasattr(command, "commands") else {path}
    return found


COMMANDS = _commands(typer.main.get_command(app))


def test_every_command_is_in_docs_cli_md():
    listed = set(re.findall(r"`mhaudit ([a-z][a-z -]*?)(?: --[a-z-]+)?`", DOC.read_text()))
    missing = sorted(COMMANDS - listed)
    assert not missing, f"commands missing from docs/cli.md: {missing}"
    stale = sorted(listed - COMMANDS)
    assert not stale, f"docs/cli.md lists commands the app does not have: {stale}"


@pytest.mark.parametrize(
    "old",
    [
        "estimate",
        "monitor",
        "benchmark",
        "label llm",
        "label prompts",
        "validate sample",
        "validate weak-lexicon",
        "validate corpus-labels",
        "validate report",
    ],
)
def test_an_old_name_is_a_usage_error(old):
    result = CliRunner().invoke(app, [*old.split(), "--help"])
    assert result.exit_code == 2 and "No such command" in result.output


def test_the_seven_audits_are_one_group():
    audits = {path.split()[1] for path in COMMANDS if path.startswith("audit ")}
    # the seven audits, and beside the monitor the acknowledgement of its alerts
    assert audits == {"cpfe", "divergence", "agreement", "model-selection", "estimate", "certify", "monitor"} | {
        "monitor-ack"
    }
    groups = {path.split()[0] for path in COMMANDS if " " in path}
    assert groups == {"audit", "data", "labels", "collect", "report", "cache"}
