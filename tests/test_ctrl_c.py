"""Ctrl-C stops the suite and leaves no server running: a pytest session that starts what the suite's
fixtures start (the PostgreSQL server of .ci/postgres-up, a browse server; tests/fixtures/interrupted_session.py)
is interrupted as a terminal interrupts it, SIGINT to its process group: once while the PostgreSQL server is
still starting, once when everything runs. The PostgreSQL server is the one to watch: pg_ctl detaches it from
the terminal, so only the session's own teardown stops it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, child_env

pytestmark = [pytest.mark.subprocess, pytest.mark.postgres]

SESSION = REPO / "tests" / "fixtures" / "interrupted_session.py"


def processes_naming(folder: Path) -> list[int]:
    """The processes whose command line names `folder` (a server with its data or database there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # ended meanwhile
                continue
            if str(folder) in line:
                found.append(int(entry.name))
    return found


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The interrupted session's temporary folder ($TMPDIR): outside pytest-of-USER, which is 0700, since as root
    the PostgreSQL server runs as the user pgserver. Whatever is still running there afterwards is stopped."""
    folder = Path(tempfile.mkdtemp(prefix="cuemem-ctrl-c-"))
    folder.chmod(0o755)
    yield folder
    for pid in processes_naming(folder):  # left by a failed run: PostgreSQL's fast shutdown, a browse server's stop
        os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 30
    while processes_naming(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    shutil.rmtree(folder, ignore_errors=True)


def wait_for(ready: Callable[[], bool], session: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if session.poll() is not None:
            output = session.stdout.read() if session.stdout else ""
            if "no PostgreSQL server" in output and not os.environ.get("CI"):
                pytest.skip("the interrupted session could not start a PostgreSQL server (the pgserver extra)")
            raise AssertionError(f"the session ended before it was interrupted:\n{output[-3000:]}")
        assert time.monotonic() < deadline, "the session did not get there in time"
        time.sleep(0.05)


@pytest.mark.parametrize("moment", ["while PostgreSQL starts", "once everything runs"])
def test_ctrl_c_stops_the_session_and_leaves_no_server(scratch, moment):
    started = scratch / "started.json"
    env = {k: v for k, v in child_env(TMPDIR=str(scratch), CUEMEM_TEST_STARTED=str(started)).items()
           if k != "CUEMEM_TEST_POSTGRES"}
    session = subprocess.Popen([*PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(SESSION)], cwd=REPO,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)  # its own process group, as a terminal's foreground job
    try:
        if moment == "while PostgreSQL starts":  # the server process exists; the database is not made yet
            wait_for(lambda: any(scratch.glob("cuemem-pg-*/pgdata/postmaster.pid")), session)
        else:
            wait_for(started.exists, session)
        os.killpg(session.pid, signal.SIGINT)
        output, _ = session.communicate(timeout=120)
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
            session.wait()
    assert session.returncode == 2 and "KeyboardInterrupt" in output, output[-3000:]  # 2: interrupted
    assert processes_naming(scratch) == [], "a server of the interrupted session is still running"
    assert not list(scratch.glob("cuemem-pg-*")), "the PostgreSQL server's folder is left behind"
    if moment == "once everything runs":
        browse = json.loads(started.read_text(encoding="utf-8"))["browse"]
        assert not Path(f"/proc/{browse}").exists()
