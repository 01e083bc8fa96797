"""How every command reports a failure: one line saying what happened, a hint saying what to do, the
error's exit code. Shared by cli/app.py and its sub-apps (cli/eval.py), which must not import cli/app.py back."""

from __future__ import annotations

import typer

from ..errors import CuememError

# The command line's words for what an error's hint is about (CuememError.fields): the library says "ask with
# a window of at most 2", the CLI adds "--window". tests/test_error_words.py holds every field the library
# names to an entry here.
FLAGS = {
    "add": "cuemem ingest FILE",
    "as_of": "--as-of TIME",
    "before": "--before TIME",
    "budget": "--budget",
    "conversation": "--conversation NAME",
    "copy": "cuemem --db FILE export -o - | cuemem --db OTHER import -",
    "db": "--db PATH (or $CUEMEM_DB)",
    "decay_days": "--decay DAYS",
    "embedder": "--embedder NAME",
    "export": "cuemem export, then cuemem import",
    "extract_model": "--extract-model MODEL",
    "extractor": "--extractor NAME",
    "formats": "`cuemem convert --help` lists them",
    "from_format": "--from FORMAT",
    "graph": "cuemem inspect-graph --format json",
    "lru": "--lru N",
    "mix_extractors": "--mix-extractors",
    "model": "--model MODEL (or $CUEMEM_MODEL)",
    "only": "--only INDEX",
    "output": "--output FILE",
    "reindex": "cuemem reindex",
    "port": "--port",
    "sem_k": "--sem-k",
    "session": "--session",
    "skip_invalid": "--skip-invalid stores the valid lines and lists the others",
    "store": "--store URL",
    "turns": "--turn",
    "vacuum": "cuemem forget --vacuum --yes",
    "window": "--window",
}


def fail(exc: CuememError) -> typer.Exit:
    """Print `exc` on stderr, its hint with the flags it is about, and return the Exit to raise
    (`raise fail(exc) from exc`)."""
    from .render import err

    err.print(f"[bold red]error:[/bold red] {plain(exc.message)}")
    hint = exc.hint_in(FLAGS)
    if hint:
        err.print(f"[dim]hint:[/dim] {plain(hint)}")
    return typer.Exit(exc.exit_code)


def plain(text: str) -> str:
    """Messages quote input (file names, ids, conversation names): no control character or markup of
    theirs reaches the terminal."""
    from .render import escape

    return escape(text)
