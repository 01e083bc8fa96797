"""How every command reports a failure: one line saying what happened, a hint saying what to do, the
error's exit code. Shared by cli/app.py and its sub-apps (cli/eval.py), which must not import cli/app.py back."""

from __future__ import annotations

import typer

from ..errors import CuememError


def fail(exc: CuememError) -> typer.Exit:
    """Print `exc` on stderr and return the Exit to raise (`raise fail(exc) from exc`)."""
    from .render import err

    err.print(f"[bold red]error:[/bold red] {plain(exc.message)}")
    if exc.hint:
        err.print(f"[dim]hint:[/dim] {plain(exc.hint)}")
    return typer.Exit(exc.exit_code)


def plain(text: str) -> str:
    """Messages quote input (file names, ids, conversation names): no control character or markup of
    theirs reaches the terminal."""
    from .render import escape

    return escape(text)
