"""The layout rules of docs/architecture.md, checked: folders only at the top of the package, short modules,
short functions, imports that flow one way, no private name imported from another package, no audit importing
another, and no import cycle."""

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
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        found |= {n.split(".")[1] for n in names if n.startswith("mhaudit.") and n.count(".") >= 1}
    return found


def test_imports_flow_down_the_layers():
    """A package imports only packages on a lower layer (docs/architecture.md), or itself; stats may use core's
    plumbing (core.threads), never the other way round."""
    layer = {
        "core": 0,
        "stats": 0,
        "tables": 1,
        "report": 2,
        "synthetic": 2,
        "text": 2,
        "weak_supervision": 2,
        "features": 3,
        "attribution": 3,
        "models": 3,
        "audits": 4,
        "experiments": 5,
        "cli": 6,
    }
    assert set(layer) == {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    upward = []
    for path in _modules():
        package = path.relative_to(SRC).parts[0]
        if package not in layer:
            continue
        for target in _imports(path) - {package}:
            if target in layer and layer[target] >= layer[package] and (package, target) != ("stats", "core"):
                upward.append(f"{path.relative_to(SRC)} imports mhaudit.{target}")
    assert not upward, "\n".join(upward)


def _private_imports(source: str, package: str) -> list[str]:
    """Where a module of `package` (dotted) imports an underscore name or module (`_x`, not a dunder) from another
    top-level package of mhaudit; lazy imports included, relative ones resolved."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            targets = [(base, a.name) for a in node.names]
        else:
            continue
        for base, name in targets:
            parts = base.split(".")
            if parts[0] != "mhaudit" or parts[1:2] == package.split(".")[1:2]:
                continue
            private = [p for p in [*parts[1:], name or ""] if p.startswith("_") and not p.endswith("__")]
            found += [f"{node.lineno} {base}{'.' + name if name else ''}"] if private else []
    return found


def test_no_package_imports_another_ones_private_names():
    """What one package uses from another is public (docs/architecture.md): no `_name` and no `_module` of another
    top-level package is imported, lazily or not; within a package a module may share its kernels."""
    found = []
    for path in _modules():
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found += [f"{path.relative_to(SRC)}:{hit}" for hit in _private_imports(path.read_text(), package)]
    assert not found, "private names imported from another package:\n" + "\n".join(found)


def test_the_private_import_check_sees_names_modules_relative_and_lazy_imports():
    source = (
        "from mhaudit.stats.auc import _macro_auc, macro_auc\nfrom mhaudit.audits.cpfe._kernels import k\n"
        "from mhaudit import __version__\nfrom ._local import x\n\ndef f():\n    import mhaudit.stats._normal\n"
        "    from ...stats import _brent, binary\n    from mhaudit.audits.divergence import _private\n"
    )
    assert _private_imports(source, "mhaudit.audits.cpfe") == [
        "1 mhaudit.stats.auc._macro_auc",
        "7 mhaudit.stats._normal",
        "8 mhaudit.stats._brent",
    ]


def _prints_or_draws(source: str) -> list[str]:
    """Where code calls print(), names sys.stdout/sys.stderr or imports rich or tqdm (lazy imports included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{node.lineno} print(")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            found.append(f"{node.lineno} sys.{node.attr}")
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        found += [f"{node.lineno} import {name}" for name in names if name.split(".")[0] in ("rich", "tqdm")]
    return sorted(found)


def test_library_code_never_prints_or_draws():
    """Only the CLI renders (docs/architecture.md): outside cli/ no print(), no sys.stdout/stderr, no rich or tqdm;
    long work reports to a mhaudit.core.progress.Progress."""
    found = [
        f"{path.relative_to(SRC)}:{hit}"
        for path in _modules()
        if path.relative_to(SRC).parts[0] != "cli"
        for hit in _prints_or_draws(path.read_text())
    ]
    assert not found, f"library code that prints or draws: {found}"


def test_the_print_check_sees_calls_streams_and_lazy_imports():
    source = "import sys\n\ndef f():\n    from rich.console import Console\n    print('x', file=sys.stderr)\n"
    assert _prints_or_draws(source) == ["4 import rich.console", "5 print(", "5 sys.stderr"]
    assert _prints_or_draws('"""print(x) in a docstring"""\nlog = print\n') == []


def _module_name(path: Path) -> str:
    parts = ("mhaudit", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """mhaudit module -> the mhaudit modules it imports.

    Every import statement counts: at the top of a module, inside a function (lazy) and under
    `if TYPE_CHECKING:`; laziness only delays a dependency, and a cycle that only laziness keeps from failing
    closes the day an import moves up. Relative imports are resolved. `from P import n` points at the module
    `P.n` when there is one, else at `P` itself: a name that P's `__init__` re-exports therefore leads through
    that `__init__`, whose own imports are edges, to the module defining it. Not counted: the implicit import of
    the parent packages that Python runs before a submodule (counting it would make every `__init__` that
    re-exports from its submodules a cycle, which Python resolves by design), and names looked up from strings
    at run time (the lazy tables of `mhaudit/__init__.py` and `audits.AUDITS`), which are not imports."""
    modules = {_module_name(p): p for p in _modules()}

    def known(name: str) -> str | None:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in modules else None

    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {known(a.name) for a in node.names if a.name.split(".")[0] == "mhaudit"}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                if base.split(".")[0] == "mhaudit":
                    found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else known(base) for a in node.names}
        graph[name] = found - {None, name}
    return graph


def test_audits_never_import_each_other():
    """What two audits share lives a floor down (report/, tables/, stats/), never in one of them; lazy imports
    and imports through a package's `__init__` count (see _import_graph)."""
    crossing = []
    for module, targets in _import_graph().items():
        parts = module.split(".")
        if len(parts) < 3 or parts[1] != "audits":
            continue
        for target in targets:
            other = target.split(".")
            if len(other) >= 3 and other[1] == "audits" and other[2] != parts[2]:
                crossing.append(f"{module} imports {target}")
    assert not crossing, "\n".join(sorted(crossing))


def test_no_import_cycles():
    """No chain of mhaudit imports leads from a module back to itself (how imports count: _import_graph)."""
    graph = _import_graph()
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(start: str) -> None:  # Tarjan's strongly connected components, iteratively
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(" <-> ".join(sorted(component)))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
