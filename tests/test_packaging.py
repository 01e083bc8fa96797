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
