"""The docs site (mkdocs.yml) builds with --strict: no broken link or anchor, no page outside the nav, no object the
API reference names that cannot be found. Every function and class the API reference renders has a docstring,
and every top-level name of `mhaudit` and every statistics module is in it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "reference"


def _rendered() -> list[str]:
    """The identifiers the API reference pages render (their `::: path` lines)."""
    return [m for page in sorted(REFERENCE.glob("*.md")) for m in re.findall(r"^::: ([\w.]+)$", page.read_text(), re.M)]


@pytest.mark.slow
def test_the_site_builds_with_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra (pip install -e '.[dev]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # the theme's banner about its future, not about these docs
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}{done.stderr}"
    page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert 'id="mhaudit-audit-cpfe"' in page and "--reference" in page  # the commands were rendered from the app
    assert "CPFEOptions" in (tmp_path / "site" / "reference" / "audits" / "index.html").read_text()


def test_every_function_and_class_in_the_api_reference_has_a_docstring():
    griffe = pytest.importorskip("griffe", reason="griffe comes with mkdocstrings, in the dev extra")
    package = griffe.load("mhaudit", search_paths=[str(REPO / "src")], resolve_aliases=False)
    missing = []

    def check(obj) -> None:
        if not obj.docstring:
            missing.append(obj.path)
        if obj.is_module or obj.is_class:
            for name, member in obj.members.items():
                if not name.startswith("_") and not member.is_alias and (member.is_function or member.is_class):
                    check(member)

    for path in _rendered():
        check(package[path.removeprefix("mhaudit.")])
    assert not missing, f"rendered in docs/reference/ without a docstring: {missing}"


def test_the_api_reference_renders_every_public_name_and_statistics_module():
    import inspect

    import mhaudit

    rendered = set(_rendered())
    missing = []
    for name in mhaudit.__all__:
        value = getattr(mhaudit, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            if not {f"{value.__module__}.{value.__qualname__}", value.__module__} & rendered:
                missing.append(name)
    stats = {f"mhaudit.stats.{p.stem}" for p in (REPO / "src" / "mhaudit" / "stats").glob("*.py")} - {
        "mhaudit.stats.__init__"
    }
    missing += sorted(stats - rendered)
    assert not missing, f"public names or statistics modules missing from docs/reference/: {missing}"
