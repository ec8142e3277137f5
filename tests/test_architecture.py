"""The import rules of docs/architecture.md, read off the source with ast (nothing is imported to check)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "validate", "reports", "collsim", "netlab")


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = _modules()


def _imports(name: str, *, top_level_only: bool) -> set[str]:
    """Absolute names ``name`` imports (every import, or only those run when the module is imported:
    not inside functions, not under ``if TYPE_CHECKING``)."""
    path, is_package = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = name.split(".") if is_package else name.split(".")[:-1]
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.If):
                if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                    continue
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
            elif not top_level_only and hasattr(node, "body"):
                visit(node.body)  # functions, classes, with-blocks

    visit(tree.body)
    out: set[str] = set()
    for node in found:
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
            continue
        module = node.module or ""
        if node.level:
            module = ".".join(base[: len(base) - (node.level - 1)] + ([module] if module else []))
        subs = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES]
        out.update(subs if len(subs) == len(node.names) else [module, *subs])
    return out


def _top(name: str) -> str:
    return name.split(".")[0]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _top(m) == "sim"))
def test_sim_imports_no_other_layer_and_no_heavy_library(module):
    banned = {"validate", "reports", "collsim", "netlab", "torch", "matplotlib", "jinja2"}
    bad = sorted(n for n in _imports(module, top_level_only=False) if _top(n) in banned)
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _top(m) != "collsim"))
def test_only_the_cli_imports_the_cli(module):
    bad = sorted(n for n in _imports(module, top_level_only=False) if _top(n) == "collsim")
    assert not bad, f"{module} imports {bad}"


def _circles() -> list[list[str]]:
    """Import circles among the project's modules, by what runs at import time."""
    graph = nx.DiGraph()
    for name in MODULES:
        graph.add_node(name)
        graph.add_edges_from((name, n) for n in _imports(name, top_level_only=True) if n in MODULES and n != name)
    return list(nx.simple_cycles(graph))


def test_modules_import_each_other_without_circles():
    assert _circles() == []


def test_the_checker_sees_a_circle_and_a_forbidden_import(tmp_path, monkeypatch):
    """The rules above can fail: two made-up modules importing each other are a circle; a function-level
    import of torch counts for sim, a TYPE_CHECKING one does not."""
    texts = {
        "fake_a": "from . import fake_b\n",
        "fake_b": "from typing import TYPE_CHECKING\nfrom .fake_a import x\nif TYPE_CHECKING:\n    import jinja2\n"
        "def f():\n    import torch\n",
    }
    for name, text in texts.items():
        (tmp_path / f"{name}.py").write_text(text)
        monkeypatch.setitem(MODULES, f"sim.{name}", (tmp_path / f"{name}.py", False))
    assert sorted(map(sorted, _circles())) == [["sim.fake_a", "sim.fake_b"]]
    assert "torch" in _imports("sim.fake_b", top_level_only=False)
    assert "torch" not in _imports("sim.fake_b", top_level_only=True)
    assert "jinja2" not in _imports("sim.fake_b", top_level_only=False)


def test_calibration_and_the_simulator_import_without_torch():
    code = "import sys, sim, validate.calibration, reports.spec; print(sorted(m for m in ('torch', 'matplotlib') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
