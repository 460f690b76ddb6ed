"""docs/architecture.md and the README's introduction held against the tree: every package has its row in the
map, every module the map names exists, every command module and every audit is named, and the README says
how to reach each audit."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "mhaudit"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def _package_rows() -> dict[str, str]:
    """Package path ('tables/corpus') -> the 'Key modules' cell of its row in the package table."""
    rows = {}
    for line in ARCHITECTURE.splitlines():
        found = re.match(r"\| `([a-z_/]+)/` \| [^|]+ \| (.+) \|$", line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


def _outside_parentheses(text: str) -> str:
    """The cell without its parenthesised asides, where functions and classes are named, not modules."""
    while (shorter := re.sub(r"\([^()]*\)", "", text)) != text:
        text = shorter
    return text


def _packages(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def test_every_package_has_a_row():
    rows = _package_rows()
    assert set(_packages(SRC)) <= set(rows), f"packages missing from the map: {set(_packages(SRC)) - set(rows)}"


def test_every_module_the_map_names_exists():
    missing = []
    for package, cell in _package_rows().items():
        folder = SRC / package
        assert folder.is_dir(), f"the map names a package that does not exist: {package}/"
        for name in re.findall(r"`([a-z_]+)/?`", _outside_parentheses(cell)):
            if not (list(folder.rglob(f"{name}.py")) or [p for p in folder.rglob(name) if p.is_dir()]):
                missing.append(f"{package}/{name}")
    assert not missing, f"modules named in docs/architecture.md but not in src/mhaudit: {missing}"


def test_every_command_module_and_audit_is_named():
    rows = _package_rows()
    commands = {p.stem for p in (SRC / "cli").glob("*.py")} - {"__init__"}
    named = set(re.findall(r"`([a-z_]+)`", rows["cli"]))
    assert commands <= named, f"cli modules missing from the map: {commands - named}"
    audits = set(_packages(SRC / "audits"))
    named = set(re.findall(r"`([a-z_]+)/`", rows["audits"]))
    assert audits <= named, f"audits missing from the map: {audits - named}"
    verdict_rows = set(re.findall(r"^\| `([a-z_]+)` \|", ARCHITECTURE, re.M))
    assert audits <= verdict_rows, f"audits missing from the verdicts table: {audits - verdict_rows}"


def test_the_readme_introduces_every_audit_by_its_command():
    intro = (ROOT / "README.md").read_text().split("## Set-up")[0]
    assert "So far" not in intro
    audits = [name.replace("_", "-") for name in _packages(SRC / "audits")]
    missing = [name for name in audits if f"mhaudit audit {name}" not in intro]
    assert not missing, f"audits the README's introduction does not name by command: {missing}"
