"""The house rules, read from the source (ast): every module sits in one layer, imports point
only down (to the layers its own may use), and no two files import each other, directly or
round a longer circle. Lazy imports inside functions count the same as top-level ones.

    kitab.core ◄─ kitab.sources ◄─ tasks ◄─ kitab.release ◄─ flows
                        ▲                                     ▲
                        ├─ kitab.simulate                     │
                        └──────────────── kitab.app (everything)
    (kitab.release: the readers of releases and the scoring, which publishing runs as the
    validity battery)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kitab.core.env import PROJECT_ROOT

# layer -> the layers its modules may import (their own included)
ALLOWED = {
    "kitab": {"kitab", "kitab.core"},  # the package face: sets up the environment, nothing more
    "kitab.core": {"kitab", "kitab.core"},
    "kitab.sources": {"kitab", "kitab.core", "kitab.sources"},
    "tasks": {"kitab", "kitab.core", "kitab.sources", "tasks"},
    # flows compose publishing, which runs the validity battery (kitab.release.validity) on the
    # staged release: the same scoring a model gets; kitab.release never imports flows
    "flows": {"kitab", "kitab.core", "kitab.sources", "tasks", "kitab.release", "flows"},
    "kitab.release": {"kitab", "kitab.core", "kitab.sources", "tasks", "kitab.release"},
    "kitab.simulate": {"kitab", "kitab.core", "kitab.sources", "kitab.simulate"},
    "kitab.app": {
        "kitab",
        "kitab.core",
        "kitab.sources",
        "tasks",
        "flows",
        "kitab.release",
        "kitab.simulate",
        "kitab.app",
    },
}
PACKAGES = ("kitab", "tasks", "flows")


def project_modules(root: Path = PROJECT_ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the three packages."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def layer_of(module: str) -> str:
    """The longest layer name that is ``module`` or a package above it."""
    return max((layer for layer in ALLOWED if module == layer or module.startswith(layer + ".")), key=len)


def imported_modules(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``module`` imports anywhere in its file (a name imported from a
    package counts as its submodule when there is one)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts and ".".join(parts) != module:
                found.add(".".join(parts))
    return found


def import_graph(root: Path = PROJECT_ROOT) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{src} ({layer_of(src)}) imports {dst} ({layer_of(dst)})"
        for src, targets in graph.items()
        for dst in targets
        if layer_of(dst) not in ALLOWED[layer_of(src)]
    )


def file_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), i.e. import circles.
    A package's ``__init__`` counts like any module: if it imports a submodule that imports the
    package back, that is a circle (Python runs one of them half-initialised)."""

    def edges(src: str) -> list[str]:
        return sorted(graph[src])

    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges(node):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_every_module_has_a_layer():
    modules = project_modules()
    assert "kitab.core.warehouse" in modules and "tasks.publish" in modules
    flat = sorted(m for m in modules if m.count(".") == 1 and m.startswith("kitab.") and m not in ALLOWED)
    assert flat == [], f"modules directly under kitab/ belong in a layer folder: {flat}"


def test_no_import_points_up():
    assert upward_imports(import_graph()) == []


def test_no_file_cycles():
    assert file_cycles(import_graph()) == []


MAX_MODULE_LINES = 600


def long_modules(root: Path = PROJECT_ROOT, limit: int = MAX_MODULE_LINES) -> list[str]:
    """Modules of the product longer than ``limit`` lines: a module that long holds more than
    one idea (data belongs in data files: tasks/taggers/data/, sql/, schemas/)."""
    return sorted(
        f"{path.relative_to(root)}: {n} lines"
        for path in project_modules(root).values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit
    )


def test_no_module_is_over_600_lines():
    assert long_modules() == []


def test_the_length_check_finds_a_long_module(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "tasks" / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "tasks" / "fits.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    assert long_modules(tmp_path) == [f"tasks/big.py: {MAX_MODULE_LINES + 1} lines"]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from kitab.app.cli import main\n", ["kitab.core.x (kitab.core) imports kitab.app.cli (kitab.app)"]),
        (
            "def f():\n    from flows.pipeline import run_pipeline\n",
            ["kitab.core.x (kitab.core) imports flows.pipeline (flows)"],
        ),
        ("from kitab.core import refs\n", []),
    ],
)
def test_the_rules_catch_an_upward_import(tmp_path, source, expected):
    """The checks themselves: a lazy import up the layers is found, a sideways one is not."""
    for package, files in {
        "kitab": ["__init__.py", "core/__init__.py", "core/refs.py", "app/__init__.py", "app/cli.py"],
        "flows": ["__init__.py", "pipeline.py"],
        "tasks": ["__init__.py"],
    }.items():
        for name in files:
            path = tmp_path / package / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
    (tmp_path / "kitab" / "core" / "x.py").write_text(source)
    assert upward_imports(import_graph(tmp_path)) == expected


def test_the_rules_catch_a_cycle(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "kitab").mkdir()
    (tmp_path / "flows").mkdir()
    for name, source in {"__init__.py": "", "a.py": "from tasks import b\n", "b.py": "import tasks.a\n"}.items():
        (tmp_path / "tasks" / name).write_text(source)
    assert file_cycles(import_graph(tmp_path)) == [["tasks.a", "tasks.b"]]


def test_a_package_that_its_submodule_imports_back_is_a_cycle(tmp_path):
    """The circle the old exemption hid (tasks/taggers/__init__ -> registry -> taggers): a
    package face importing a submodule that imports the package back."""
    (tmp_path / "kitab").mkdir()
    (tmp_path / "flows").mkdir()
    (tmp_path / "tasks" / "reg").mkdir(parents=True)
    (tmp_path / "tasks" / "__init__.py").write_text("")
    (tmp_path / "tasks" / "reg" / "__init__.py").write_text("from tasks.reg import registry\n")
    (tmp_path / "tasks" / "reg" / "registry.py").write_text("def f():\n    import tasks.reg\n")
    assert file_cycles(import_graph(tmp_path)) == [["tasks.reg", "tasks.reg.registry"]]
