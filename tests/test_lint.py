"""ruff and mypy with the configuration in pyproject.toml: a finding fails the suite, so `.ci/run` (the
README's test command) fails on it without a command of its own. ruff reads cuemem's source, the tests
and the benchmarks; mypy the source and the benchmark suite (bench/, not its one-off experiments). The
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


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed (it comes with the test extra: pip install 'cuemem[test]')")
    if not (REPO / "pyproject.toml").is_file() or not SOURCE.is_dir():
        pytest.skip(f"no source tree with its pyproject.toml at {REPO}")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing():
    folders = [str(folder) for folder in (SOURCE, REPO / "tests", BENCH) if folder.is_dir()]
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
