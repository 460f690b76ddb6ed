"""ruff's lint rules (pyproject.toml [tool.ruff]: pycodestyle E/W and pyflakes F, lines up to 120) and its formatter
hold over src and tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing_in_src_and_tests():
    pytest.importorskip("ruff", reason="ruff is in the dev extra (pip install -e '.[dev]')")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "src", "tests"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"ruff check found:\n{done.stdout}{done.stderr}"


def test_ruff_format_would_change_nothing_in_src_and_tests():
    pytest.importorskip("ruff", reason="ruff is in the dev extra (pip install -e '.[dev]')")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "src", "tests"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (
        f"ruff format would reformat (run `ruff format src tests`):\n{done.stdout}{done.stderr}"
    )
