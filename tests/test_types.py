"""mypy (pyproject.toml [tool.mypy]: src/mhaudit, Python 3.11; the untyped third-party modules listed one by one)
finds no error in src. A `# type: ignore[code]` is per line and says why on that line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_mypy_finds_nothing_in_src():
    # mypy is in the dev extra, as pytest is: no skip, a missing mypy fails here
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context", "--no-pretty"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 0 and not errors, f"mypy found:\n{done.stdout}{done.stderr}"


def test_every_type_ignore_names_its_code_and_says_why():
    bare = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in sorted((REPO / "src").rglob("*.py"))
        for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if "# type: ignore" in line and not _explained(line)
    ]
    assert not bare, "a type: ignore without [code] and a reason on its line:\n" + "\n".join(bare)


def _explained(line: str) -> bool:
    after = line.split("# type: ignore", 1)[1]
    return after.startswith("[") and "]" in after and "#" in after.split("]", 1)[1]
