"""Run `cuemem browse`: bind 127.0.0.1, print the address, open a browser, serve until Ctrl-C."""

from __future__ import annotations

import errno
import os
import secrets
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable

from ..errors import CuememError
from ..memory import Memory

HOST = "127.0.0.1"  # never another interface: the memory is one person's
GRACE_SECONDS = 5  # after Ctrl-C, how long a request still running (a model's answer) may finish


def serve(memory: Memory, port: int = 0, open_browser: bool = True, model: str | None = None,
          db_shown: str = "", say: Callable[[str], None] | None = None) -> None:
    """Serve `memory` read-only at http://127.0.0.1:PORT/TOKEN/ until interrupted. The address is printed
    on stdout (alone on its line, for scripts); what else is said goes to `say`."""
    import uvicorn

    from .app import create_app

    say = say or _to_stderr

    memory.store  # noqa: B018  (open it now: a missing or foreign database is an error before any URL)
    sock = bind(port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    url = f"http://{HOST}:{port}/{token}/"
    app = create_app(memory, model, token, port, db_shown)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            timeout_graceful_shutdown=GRACE_SECONDS)
    server = uvicorn.Server(config)
    print(url, flush=True)
    say(f"serving {db_shown} read-only at {url} (only this address works; Ctrl-C stops)")
    if open_browser and not _open(url):
        say("no display to open a browser on: open the address above in one")
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shuts down gracefully on Ctrl-C, then raises it again
        pass
    finally:
        sock.close()
    say("stopped")


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:`port` (0: a free one). Listening before the browser is opened means
    its first request waits in the backlog instead of failing."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CuememError(f"port {port} on {HOST} is in use",
                              "choose another port, or let cuemem pick a free one", fields=("port",)) from None
        raise CuememError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def _open(url: str) -> bool:
    """Open `url` in the user's browser when there is a screen to show it on: without one (an SSH session,
    a container) Python's webbrowser would start a text browser in this terminal, or nothing."""
    if not (sys.platform in ("darwin", "win32") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    return True


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
