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


def subpackages() -> list[str]:
    return sorted(p.parent.name for p in SOURCE.glob("*/__init__.py"))


def test_each_pipeline_step_is_a_folder_and_few_modules_sit_beside_them():
    assert set(STEPS) <= set(subpackages())
    top = sorted(p.name for p in SOURCE.glob("*.py"))
    assert len(top) <= 15, top


@pytest.mark.parametrize("package", STEPS)
def test_a_step_folder_says_what_each_of_its_modules_holds(package):
    """Its `__init__.py` docstring names every module of the folder, so a newcomer reads the folder's map first
    (and a module added or renamed without it fails here)."""
    folder = SOURCE / package
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
    assert modules
    missing = [name for name in modules if f"`{name}`" not in doc]
    assert not missing, f"{package}/__init__.py does not name {missing}"
