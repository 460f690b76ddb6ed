"""Under CI=true a skipped test fails the run unless tests/conftest.py allows it (a real pytest run)."""

import os
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")
TESTS = """
import pytest

def test_runs():
    assert True

def test_needs_a_browser():
    pytest.skip("no chromium")

@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False
"""


def _run(tmp_path: Path, ci: str, allowed: str = "{}", *options: str) -> subprocess.CompletedProcess:
    conftest = CONFTEST.read_text().replace(
        "SKIP_ALLOWED_IN_CI: dict[str, str] = {}", f"SKIP_ALLOWED_IN_CI: dict[str, str] = {allowed}"
    )
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_x.py").write_text(TESTS)
    env = {**os.environ, "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )


def test_a_skip_fails_under_ci(tmp_path):
    done = _run(tmp_path, "true")
    assert done.returncode == 1
    assert "1 failed, 1 passed, 1 xfailed" in done.stdout
    assert "skipped under CI=true" in done.stdout and "no chromium" in done.stdout


def test_a_skip_fails_under_ci_on_xdist_workers_too(tmp_path):
    # The suite runs on xdist workers (pyproject.toml): the failed report must reach the controller as failed.
    done = _run(tmp_path, "true", "{}", "-n", "2", "--dist", "loadgroup")
    assert done.returncode == 1
    assert "1 failed, 1 passed, 1 xfailed" in done.stdout
    assert "skipped under CI=true" in done.stdout and "no chromium" in done.stdout


def test_a_skip_is_a_skip_outside_ci(tmp_path):
    done = _run(tmp_path, "false")
    assert done.returncode == 0 and "1 passed, 1 skipped, 1 xfailed" in done.stdout


def test_an_allowed_skip_stays_a_skip_under_ci(tmp_path):
    done = _run(tmp_path, "true", '{"test_x.py::test_needs_a_browser": "needs the internet"}')
    assert done.returncode == 0 and "1 passed, 1 skipped, 1 xfailed" in done.stdout, done.stdout
