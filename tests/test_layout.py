"""The layout rules of docs/architecture.md, checked: folders only at the top of the package, short modules,
short functions, and imports that flow one way."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mhaudit"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def _modules():
    return sorted(SRC.rglob("*.py"))


def test_only_init_and_main_at_the_top():
    assert sorted(p.name for p in SRC.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_no_module_over_400_lines():
    long = {str(p.relative_to(SRC)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_80_lines():
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.lineno} {node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def _imports(path: Path) -> set[str]:
    """The mhaudit packages a module imports (first level below mhaudit), lazy imports inside functions included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found |= {n.split(".")[1] for n in names if n.startswith("mhaudit.") and n.count(".") >= 1}
    return found


def test_imports_flow_down_the_layers():
    """A package imports only packages on a lower layer (docs/architecture.md), or itself."""
    layer = {"core": 0, "stats": 0, "tables": 1, "report": 2, "synthetic": 2, "text": 2, "weak_supervision": 2,
             "features": 3, "attribution": 3, "models": 3, "audits": 4, "experiments": 5, "cli": 6}
    assert set(layer) == {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    upward = []
    for path in _modules():
        package = path.relative_to(SRC).parts[0]
        if package not in layer:
            continue
        for target in _imports(path) - {package}:
            if target in layer and layer[target] >= layer[package]:
                upward.append(f"{path.relative_to(SRC)} imports mhaudit.{target}")
    assert not upward, "\n".join(upward)


def _prints_or_draws(source: str) -> list[str]:
    """Where code calls print(), names sys.stdout/sys.stderr or imports rich or tqdm (lazy imports included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{node.lineno} print(")
        elif isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr") and \
                isinstance(node.value, ast.Name) and node.value.id == "sys":
            found.append(f"{node.lineno} sys.{node.attr}")
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        found += [f"{node.lineno} import {name}" for name in names if name.split(".")[0] in ("rich", "tqdm")]
    return sorted(found)


def test_library_code_never_prints_or_draws():
    """Only the CLI renders (docs/architecture.md): outside cli/ no print(), no sys.stdout/stderr, no rich or tqdm;
    long work reports to a mhaudit.core.progress.Progress."""
    found = [f"{path.relative_to(SRC)}:{hit}" for path in _modules() if path.relative_to(SRC).parts[0] != "cli"
             for hit in _prints_or_draws(path.read_text())]
    assert not found, f"library code that prints or draws: {found}"


def test_the_print_check_sees_calls_streams_and_lazy_imports():
    source = "import sys\n\ndef f():\n    from rich.console import Console\n    print('x', file=sys.stderr)\n"
    assert _prints_or_draws(source) == ["4 import rich.console", "5 print(", "5 sys.stderr"]
    assert _prints_or_draws('"""print(x) in a docstring"""\nlog = print\n') == []
