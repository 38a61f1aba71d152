"""The product code's import graph: no cycle, and no import inside a function to hide one.

Every module of ``leaderboard``, ``evaluation``, ``simulation``, ``mirrorbench_site`` and
``mirrorbench`` is parsed (not imported). A module-level import (``if TYPE_CHECKING`` blocks
included) is an edge; so is an import inside a function, which is allowed only where
``LAZY_IMPORTS`` gives the reason. The graph of both kinds of edge together must have no cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("leaderboard", "evaluation", "simulation", "mirrorbench_site", "mirrorbench")

LAZY_IMPORTS: dict[str, tuple[str, frozenset[str]]] = {
    "leaderboard.apps": (
        "AppConfig.ready: the system checks and signal receivers need the app registry loaded",
        frozenset(
            {"leaderboard.checks", "leaderboard.accounts.services", "leaderboard.search.index"}
        ),
    ),
    "evaluation.cli": (
        "each command loads only what it runs, so `mirrorbench --help` starts at once",
        frozenset(
            {
                "simulation.backends",
                "simulation.usd_export",
                "evaluation.preview",
                "evaluation.agents",
                "evaluation.cache",
                "evaluation.config",
                # pyarrow loads only for export-parquet and export-eee.
                "evaluation.details",
                "evaluation.eee",
                "evaluation.run_file",
                "evaluation.registry",
                # replay-html renders its frames; the writer loads only for it.
                "evaluation.render_pool",
                "evaluation.replay_html",
                "evaluation.runner",
                "evaluation.verify",
                "evaluation.submit",
                # Inspect AI, an optional extra: only import-inspect loads it.
                "mirrorbench.logs",
            }
        ),
    ),
    "leaderboard.queue": (
        "Celery and kombu load when a process first queues a task, not in every web process "
        "and manage.py command (about 0.1 s of CPU at each start)",
        frozenset({"mirrorbench_site.celery"}),
    ),
    "evaluation.render_pool": (
        "MuJoCo and its OpenGL load only in the pool's rendering processes",
        frozenset({"simulation.mujoco_backend"}),
    ),
    "simulation.backends": (
        "an optional backend: MuJoCo and its OpenGL load only where MuJoCo renders",
        frozenset({"simulation.mujoco_backend"}),
    ),
    "simulation.isaac_backend": (
        "pxr must load after Isaac Sim's Kit has started (Kit brings its own USD)",
        frozenset({"simulation.usd_export"}),
    ),
    "simulation.usd_export": (
        "MuJoCo and its OpenGL load only when a stage is exported, not on an Isaac machine",
        frozenset({"simulation.mujoco_backend", "simulation.assets.marks"}),
    ),
}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    lazy: bool
    line: int


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                modules[_module_name(path)] = path
    return modules


def _targets(node: ast.Import | ast.ImportFrom, source: str, modules: dict[str, Path]) -> set[str]:
    """The product modules an import statement loads (``from p import m`` names module p.m)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = source.split(".")
            if modules[source].name != "__init__.py":
                package = package[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([node.module] if node.module else [])])
        names = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
            for alias in node.names
        ]
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        # A package's __init__ always runs before its modules: that is no cycle.
        if name and name != source and not source.startswith(f"{name}."):
            found.add(name)
    return found


def import_edges(modules: dict[str, Path]) -> Iterator[Edge]:
    for source, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        inside = set()
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inside.update(id(node) for node in ast.walk(function))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(node, source, modules):
                    yield Edge(source, target, id(node) in inside, node.lineno)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one cycle of ``graph`` (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return list(import_edges(product_modules()))


def test_the_product_import_graph_has_no_cycle(edges):
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_imports_inside_functions_are_only_the_listed_lazy_ones(edges):
    unlisted = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if e.lazy and e.target not in LAZY_IMPORTS.get(e.source, ("", frozenset()))[1]
    ]
    assert not unlisted, (
        "imports inside functions (move them to the top, or list them in LAZY_IMPORTS with "
        "the reason): " + "; ".join(unlisted)
    )


def test_every_listed_lazy_import_still_exists(edges):
    lazy = {(e.source, e.target) for e in edges if e.lazy}
    stale = [
        f"{source} -> {target}"
        for source, (_, targets) in LAZY_IMPORTS.items()
        for target in targets
        if (source, target) not in lazy
    ]
    assert not stale, f"LAZY_IMPORTS lists imports that are gone: {stale}"


def test_the_cycle_finder_finds_a_cycle_and_the_edge_reader_sees_lazy_imports(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) is None
    modules = {"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    modules["pkg.a"].write_text("import pkg.b\n")
    modules["pkg.b"].write_text("def f():\n    from pkg import a\n")
    found = {(e.source, e.target, e.lazy) for e in import_edges(modules)}
    assert found == {("pkg.a", "pkg.b", False), ("pkg.b", "pkg.a", True)}


LAYERS: dict[str, frozenset[str]] = {
    "simulation": frozenset({"simulation"}),
    # evaluation.cli's import-inspect loads mirrorbench.logs (listed in LAZY_IMPORTS).
    "evaluation": frozenset({"evaluation", "simulation", "mirrorbench"}),
    "mirrorbench": frozenset({"mirrorbench", "evaluation", "simulation"}),
}
"""The product packages each engine package may import; ``leaderboard`` and ``mirrorbench_site``
(the site) may import any. The engine never imports the site, so it runs without a database."""

SITE_ONLY = ("django", "rest_framework", "celery", "leaderboard", "mirrorbench_site")


def test_each_engine_package_imports_only_the_layers_below_it(edges):
    wrong = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges
        if (layer := e.source.split(".")[0]) in LAYERS
        and e.target.split(".")[0] not in LAYERS[layer]
    ]
    assert not wrong, wrong


def test_the_engine_never_imports_django_or_the_site():
    found = []
    for name, path in product_modules().items():
        if name.split(".")[0] not in LAYERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            found += [f"{name}:{node.lineno} imports {root}" for root in roots if root in SITE_ONLY]
    assert not found, found
