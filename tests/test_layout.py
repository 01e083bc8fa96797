"""The package's shape: a folder per pipeline step, few modules beside them, each folder saying what it holds.

docs/how-it-works.md draws the layout; pyproject.toml's import-linter contracts (tests/test_lint.py) hold the
folders to their layers. These tests keep the tree from drifting back to a flat list of modules.
"""

from __future__ import annotations

import ast

import pytest
from conftest import REPO

SOURCE = REPO / "cuemem_cli"
STEPS = ("input", "cues", "models", "ingest", "recall", "answer", "manage", "store", "cli")
NESTED = tuple(sorted(p.parent.relative_to(SOURCE).as_posix() for p in SOURCE.glob("*/*/__init__.py")))  # store/sql


def subpackages() -> list[str]:
    return sorted(p.parent.name for p in SOURCE.glob("*/__init__.py"))


def test_each_pipeline_step_is_a_folder_and_few_modules_sit_beside_them():
    assert set(STEPS) <= set(subpackages())
    top = sorted(p.name for p in SOURCE.glob("*.py"))
    assert len(top) <= 15, top


@pytest.mark.parametrize("package", STEPS + NESTED)
def test_a_step_folder_says_what_each_of_its_modules_holds(package):
    """Its `__init__.py` docstring names every module of the folder, so a newcomer reads the folder's map first
    (and a module added or renamed without it fails here)."""
    folder = SOURCE / package
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
    assert modules
    missing = [name for name in modules if f"`{name}`" not in doc]
    assert not missing, f"{package}/__init__.py does not name {missing}"


# ------------------------------------------------------------ sizes a newcomer can hold
PROTOCOL_METHODS = 40  # a Protocol is what a new implementation writes in full: a third store backend
CLASS_LINES = 400


def classes() -> dict[str, ast.ClassDef]:
    """Every class of the package, by `path:Name`."""
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[f"{path.relative_to(SOURCE).as_posix()}:{node.name}"] = node
    return found


def _base_names(node: ast.ClassDef) -> list[str]:
    return [base.id if isinstance(base, ast.Name) else base.attr for base in node.bases
            if isinstance(base, (ast.Name, ast.Attribute))]


def protocol_methods() -> dict[str, set[str]]:
    """Each Protocol's methods by name (an overloaded one once, a property too), with those of the package's
    Protocols it extends: what a class must define to be one."""
    protocols = {key: node for key, node in classes().items() if "Protocol" in _base_names(node)}
    by_name = {node.name: node for node in protocols.values()}

    def methods(node: ast.ClassDef) -> set[str]:
        own = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return own.union(*(methods(by_name[name]) for name in _base_names(node) if name in by_name))

    return {key: methods(node) for key, node in protocols.items()}


def test_no_protocol_has_more_than_40_methods():
    """The engine's `Store` (store/base.py) is what a third backend writes first: what only one tool asks is in
    that tool's protocol, what can be computed from other methods a function beside them."""
    counted = protocol_methods()
    assert {"knn_cues", "transaction", "bind_embedder"} <= counted["store/base.py:Store"]  # the count sees them
    wide = {key: len(methods) for key, methods in counted.items() if len(methods) > PROTOCOL_METHODS}
    assert not wide, f"Protocols over {PROTOCOL_METHODS} methods: {wide}"


def test_no_class_is_longer_than_400_lines():
    """A class longer than this holds several jobs: split it along them (store/sql/ is `SQLStore` split per
    protocol)."""
    lines = {key: node.end_lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1
             for key, node in classes().items() if node.end_lineno is not None}
    assert lines["ingest/pipeline.py:Ingestor"] > 100  # the count sees whole classes
    long = {key: n for key, n in lines.items() if n > CLASS_LINES}
    assert not long, f"classes over {CLASS_LINES} lines: {long}"
