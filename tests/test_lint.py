"""ruff, mypy and import-linter with the configuration in pyproject.toml: a finding fails the suite, so `.ci/run` (the
README's test command) fails on it without a command of its own. ruff reads cuemem's source, the tests, scripts/
and the benchmarks; mypy the source and the benchmark suite (bench/, not its one-off experiments). import-linter
keeps the layers ([tool.importlinter]: no import cycle, nothing below the interfaces imports them, the store
imports no engine module), counting function-level imports too. The
tests are not type-checked: pytest's fixtures and the union types they probe would need casts that say
nothing about cuemem.

They read the source tree beside these tests (the installed wheel holds the same files:
test_packaging.py checks it), from the repository root, where pyproject.toml configures them.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.subprocess  # ruff and mypy run as processes

SOURCE = REPO / "cuemem_cli"
BENCH = REPO / "bench"


def _run(tool: str, *args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m tool ARGS` from the repository root, or `python -c CODE` for a tool without `-m`."""
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed (it comes with the test extra: pip install 'cuemem[test]')")
    if not (REPO / "pyproject.toml").is_file() or not SOURCE.is_dir():
        pytest.skip(f"no source tree with its pyproject.toml at {REPO}")
    command = [sys.executable, *(("-c", code) if code else ("-m", tool)), *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    folders = [str(folder) for folder in (SOURCE, REPO / "tests", BENCH, REPO / "scripts") if folder.is_dir()]
    result = _run("ruff", "check", "--no-fix", "--output-format", "concise", *folders)
    assert result.returncode == 0, f"ruff check {' '.join(folders)}:\n{result.stdout}{result.stderr}"


def test_mypy_finds_nothing_in_every_module():
    result = _run("mypy")  # files and options: [tool.mypy] in pyproject.toml
    assert result.returncode == 0, f"mypy:\n{result.stdout}{result.stderr}"
    checked = re.search(r"no issues found in (\d+) source files", result.stdout)
    modules = [p for p in SOURCE.rglob("*.py") if "__pycache__" not in p.parts]
    assert checked and int(checked.group(1)) == len(modules), result.stdout


def test_mypy_finds_nothing_in_the_benchmark_suite():
    if not BENCH.is_dir():
        pytest.skip(f"no bench folder at {BENCH}")
    result = _run("mypy", str(BENCH), "--exclude", "bench/experiments")
    assert result.returncode == 0, f"mypy bench:\n{result.stdout}{result.stderr}"
    checked = re.search(r"no issues found in (\d+) source files", result.stdout)
    scripts = list(BENCH.glob("*.py"))
    assert checked and int(checked.group(1)) == len(scripts), result.stdout


def test_the_import_layers_hold():
    command = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    result = _run("importlinter", code=command)  # lint-imports, found by module rather than on PATH
    assert result.returncode == 0, f"lint-imports:\n{result.stdout}{result.stderr}"
    assert re.search(r"Contracts: \d+ kept, 0 broken", result.stdout), result.stdout
