"""The floors import one way, and the limits that keep the house small hold (issue 20, items 4 and 6).

The import graph is read from the source (AST), imports inside functions included, the way the house's
architecture measure reads it: `import a.b` is an edge to a.b, `from a import b` to the module a.b if
there is one, else to a; relative imports resolved.
Checked: no circle of two or more files in mad_core/ or madlab_ui/; components (the modules the
registry loads, the protocols) never import the engine, the store, the view or the live registry;
madlab_ui never imports the engine. Limits: no function over 80 lines outside tests/ and bench/; nothing outside the store package
touches its private parts (`._write(`, `._is_dead(`, `.db.query(`, `.db[`).

Each check has its positive control: the same reader finds a circle, a long function and a reach-in
planted in a throw-away package.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from mad_core import registry

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("mad_core", "madlab_ui")
FUNCTION_LINES = 80
REACH_IN = re.compile(r"\._write\(|\._is_dead\(|\.db\.query\(|\.db\[")


def modules(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `packages` under `root`."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in the file, functions included)."""
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                        if node.level else node.module or "")
                # `from pkg import sub` names the module pkg.sub; `from pkg import name`, pkg itself
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in found else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def long_functions(paths, limit: int = FUNCTION_LINES) -> list[str]:
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    out.append(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:"
                               f"{node.lineno} {node.name} ({lines} lines)")
    return out


def reach_ins(paths) -> list[str]:
    return [f"{path}:{number}: {line.strip()}" for path in paths
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if REACH_IN.search(line)]


def imports_of(graph: dict[str, set[str]], name: str, forbidden: tuple[str, ...]) -> set[str]:
    return {target for target in graph[name] if any(target == f or target.startswith(f + ".") for f in forbidden)}


@pytest.fixture(scope="module")
def project():
    found = modules(REPO)
    return found, import_graph(found)


# ----- the checks on the project ---------------------------------------------------------------------
def test_no_import_circle_in_the_engine_or_the_ui(project):
    found, graph = project
    assert {"mad_core.engine", "mad_core.store", "madlab_ui.access"} <= set(found)  # the reader saw the code
    assert circles(graph) == []


def components(found: dict[str, str]) -> list[str]:
    loaded = [importlib.util.resolve_name(module, "mad_core") for module in registry.BUILTIN]
    return sorted(set(loaded) | {name for name in found if name.startswith("mad_core.protocols.")})


def test_components_reach_no_engine_store_view_or_live(project):
    found, graph = project
    named = components(found)
    assert "mad_core.protocols.simple_voting" in named and "mad_core.paradigms" in named
    forbidden = ("mad_core.engine", "mad_core.store", "mad_core.view", "mad_core.live")
    assert {name: imports_of(graph, name, forbidden) for name in named
            if imports_of(graph, name, forbidden)} == {}


def test_the_ui_never_imports_the_engine(project):
    found, graph = project
    ui = [name for name in found if name.startswith("madlab_ui")]
    assert len(ui) > 10
    assert {name: imports_of(graph, name, ("mad_core.engine",)) for name in ui
            if imports_of(graph, name, ("mad_core.engine",))} == {}


def test_the_view_and_the_report_read_debates_without_the_registry_or_the_config(project):
    # A round's topic and step plan are recorded with it (RoundStarted), so a stored debate renders and
    # is measured without the components or the settings' rules of the version that reads it.
    found, graph = project
    forbidden = ("mad_core.registry", "mad_core.config")
    assert {"mad_core.view", "mad_core.metrics.report"} <= set(found)
    assert {name: imports_of(graph, name, forbidden) for name in ("mad_core.view", "mad_core.metrics.report")
            if imports_of(graph, name, forbidden)} == {}


def source_files() -> list[Path]:
    """Every .py file of the project outside tests/ and bench/ (and the virtual environment)."""
    return [REPO / "app.py", *sorted((REPO / "pages").glob("*.py")),
            *[path for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))]]


def test_no_function_over_eighty_lines():
    assert long_functions(source_files()) == []


def test_nothing_outside_the_store_touches_its_private_parts():
    outside = [path for path in source_files() if "store" not in path.relative_to(REPO).parts[:2]]
    assert REPO / "mad_core" / "polls.py" in outside
    assert reach_ins(outside) == []


# ----- positive controls: the same readers on planted code ------------------------------------------
def plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_reader_finds_a_circle_closed_inside_a_function(tmp_path):
    plant(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from . import b\n",
                     "pkg/b.py": "def late():\n    from pkg.c import x\n", "pkg/c.py": "from .a import y\n",
                     "pkg/d.py": "import pkg.a\n"})
    graph = import_graph(modules(tmp_path, ("pkg",)))
    assert graph["pkg.b"] == {"pkg.c"} and graph["pkg.d"] == {"pkg.a"}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_the_limits_catch_a_long_function_and_a_reach_in(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    plant(tmp_path, {"long.py": f"def long():\n{body}\n", "short.py": "def short():\n    return store.db['t']\n"})
    assert [entry.split(" ", 1)[1] for entry in long_functions([tmp_path / "long.py", tmp_path / "short.py"])] == [
        f"long ({FUNCTION_LINES + 1} lines)"]
    assert len(reach_ins([tmp_path / "short.py", tmp_path / "long.py"])) == 1
