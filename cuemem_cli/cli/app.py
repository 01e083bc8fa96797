"""The `cuemem` command: parse options, call `Memory` and the pipeline modules, print.

Exit codes: 0 success; 1 an error cuemem explains (bad input, missing model, …); 2 a usage error;
3 ingest finished but left turns pending, skipped invalid lines or conflicting ones.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from .. import config
from ..config import (
    ASK_SEM_K,
    ASK_WINDOW,
    BUILD_SEM_K,
    BUILD_WINDOW,
    DEFAULT_BUDGET,
    DEFAULT_EVIDENCE_SHOWN,
    DEFAULT_EXCERPT_TOKENS,
    DEFAULT_TOP_M,
)
from ..errors import CuememError
from ..input.formats import FORMATS, Format
from . import help as cli_help
from .output import fail, plain

if TYPE_CHECKING:
    from ..memory import Memory  # imported when a command runs: `cuemem --help` loads no engine module


class _Group(TyperGroup):
    """The top-level command group: a `CuememError` from any command becomes its message, hint and exit
    code; a reader that stops early (`cuemem ask … | head -1`) ends us quietly; help and completion as
    cli/help.py says."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        cli_help.tidy(self)

    def _main_shell_completion(self, ctx_args: Any, prog_name: str, complete_var: str | None = None) -> None:
        cli_help.completion_instruction(os.environ, prog_name, complete_var)
        super()._main_shell_completion(ctx_args, prog_name, complete_var)

    def invoke(self, ctx: Any) -> Any:  # typer's own (vendored) click Context
        """Every command's (and sub-app's) library errors end here, printed in the CLI's words with their
        exit code (cli/output.py `fail`): a command body holds only its work."""
        try:
            return super().invoke(ctx)
        except CuememError as exc:
            raise fail(exc) from exc
        except BrokenPipeError:
            _discard_stdout()
            raise typer.Exit(0) from None


def _discard_stdout() -> None:
    """stdout's reader is gone: send what is still buffered to /dev/null, so neither our next write nor
    Python's flush at exit reports a broken pipe (the recipe of Python's signal module documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


app = typer.Typer(
    cls=_Group,
    name="cuemem",
    help="Long-term memory for conversations: cues → turn graph → compact evidence for any LLM.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
convert_app = typer.Typer(help="Convert benchmark and chat exports to cuemem's message JSONL (stdout).",
                          no_args_is_help=True)
app.add_typer(convert_app, name="convert")
from .eval import eval_app  # noqa: E402  (a sub-app; heavy imports stay inside its commands)

app.add_typer(eval_app, name="eval")

EXIT_PARTIAL = 3
QUIET_HELP = ("No progress on stderr (by default a bar on a terminal, else a line every 10 s; "
              "CUEMEM_PROGRESS_SECONDS sets how often).")


class State:
    db: str | None = None


state = State()


class _Warnings(logging.Handler):
    """The library's warnings (a bookkeeping write skipped on a read-only memory or a full disk) as one
    `warning:` line on stderr, as errors are printed."""

    def emit(self, record: logging.LogRecord) -> None:
        from .render import err

        err.print(f"[bold yellow]warning:[/bold yellow] {plain(record.getMessage())}")


def _show_warnings() -> None:
    logger = logging.getLogger("cuemem_cli")
    if not any(isinstance(handler, _Warnings) for handler in logger.handlers):
        logger.addHandler(_Warnings(logging.WARNING))
    # psycopg warns that it abandoned a statement pipeline after a server error, which cuemem's own error
    # message reports (a full disk): one message, not two
    logging.getLogger("psycopg").setLevel(logging.ERROR)


def _memory(create: bool = False, **kwargs: Any) -> Memory:
    """The memory --db names (resolved as Memory resolves it: store/open.py). Only the commands that store
    turns (ingest, import) create the database."""
    from ..memory import Memory

    return Memory(state.db, create=create, **kwargs)


def _db_shown() -> str:
    """The database as reports name it: its path, or its URL without the password."""
    from ..store.open import resolve_target, shown

    return shown(resolve_target(state.db))


def _version(value: bool) -> None:
    """`--version`: the installed distribution's version, else the source tree's."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("cuemem")
        except PackageNotFoundError:  # run from a source tree
            from .. import __version__ as number
        typer.echo(f"cuemem {number}")
        raise typer.Exit()


@app.callback()
def main(
    db: str | None = typer.Option(None, "--db", help="Database file, or a postgresql:// URL (default: $CUEMEM_DB, "
                                  "else the per-user data dir).", metavar="PATH"),
    version: bool = typer.Option(False, "--version", "-V", help="Print cuemem's version and exit.",
                                 callback=_version, is_eager=True),
) -> None:
    state.db = db
    _show_warnings()


# ------------------------------------------------------------------ ingest
_BRANCHING = " or ".join(f"--from {name}" for name, fmt in FORMATS.items() if fmt.branches)  # --all-branches' use


@app.command()
def ingest(
    files: list[str] = typer.Argument(..., help="Message JSONL files, read in the order given: - for standard "
                                                "input, a folder for its *.jsonl files and chat exports (other "
                                                "files are named, with why); gzip and zip are read as they are; "
                                                "a ChatGPT or Claude.ai export is recognised. With --from, "
                                                "export files (or their folders or .zip).",
                                      metavar="FILE"),
    from_format: str | None = typer.Option(None, "--from", metavar="FORMAT",
                                           help="Convert from this format first (as `cuemem convert FORMAT`): "
                                                f"{', '.join(FORMATS)}; jsonl is cuemem's own (the default)."),
    all_branches: bool = typer.Option(False, "--all-branches",
                                      help=f"With {_BRANCHING}: every edited or regenerated branch, not only the "
                                           "kept one."),
    conversation: str | None = typer.Option(None, "--conversation", "-c",
                                            help="Store every line in this conversation, whatever it names "
                                                 "(ids of lines from another conversation become CONV/ID)."),
    extractor: str = typer.Option("spacy", help="Cue extractor: spacy (offline rules), llm, or a registered name."),
    extract_model: str | None = typer.Option(None, help="litellm model for --extractor llm."),
    mix_extractors: bool = typer.Option(False, "--mix-extractors",
                                        help="Allow cues of another extractor than the database was built with."),
    embedder: str | None = typer.Option(None, help=config.EMBEDDER_HELP),
    window: int | None = typer.Option(None, help="Temporal window w built into the graph (new DB only; "
                                                 f"default {BUILD_WINDOW})."),
    sem_k: int | None = typer.Option(None, help="Semantic neighbours k per cue built into the graph (new DB only; "
                                                f"default {BUILD_SEM_K})."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid",
                                      help="Report and skip bad lines instead of rejecting the file."),
    replace: bool = typer.Option(False, "--replace",
                                 help="Replace stored turns whose text changed (same id); without it they are "
                                      "reported as conflicts and kept."),
    workers: int | None = typer.Option(None, "--workers", min=1,
                                       help="Processes that parse and embed: default one per core (up to 8) for "
                                            "inputs of 1,000 lines or more; 1 keeps all work in this process."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
) -> None:
    """Store dialogues: turns, cues, cue vectors and graph edges, in the database (--db).

    \b
    Input: JSONL, one message per line, e.g.
      {"conversation": "maya", "session": "s2", "time": "2023-05-14T10:20:00",
       "speaker": "Maya", "role": "user", "text": "I adopted a dog!", "id": "s2:1"}
    Fields (aliases in brackets):
      text          required: what was said [content, message, utterance]
      conversation  required unless --conversation; the chat it was said in
                    [conversation_id, conv]
      time          ISO 8601, "8 May, 2023", epoch seconds …; with a zone → UTC
                    [timestamp, date, datetime, created_at]
      speaker       who said it; "I"/"my" resolve to it [name, author, sender]
      role          user, assistant, …
      session       [session_id]
      id            the turn's id, kept as source_id; without it, a hash of time, speaker
                    and text [turn_id, dia_id, message_id]
    Other fields are kept with the turn. Other formats: --from FORMAT.
    Every field and converter, with examples: docs/input-formats.md
    """
    from .render import ingest_progress

    if from_format == "jsonl":  # cuemem's own format, named: the default
        from_format = None
    if from_format is not None and from_format not in FORMATS:
        raise typer.BadParameter(f"{from_format!r} is not one of jsonl, {', '.join(FORMATS)}", param_hint="--from")
    if all_branches and (from_format is None or not FORMATS[from_format].branches):
        called = " or ".join(fmt.called for fmt in FORMATS.values() if fmt.branches)
        raise typer.BadParameter(f"branches are kept only in {called}: use it with {_BRANCHING}",
                                 param_hint="--all-branches")
    with _memory(create=True, embedder=embedder, extractor=extractor, extract_model=extract_model,
                 mix_extractors=mix_extractors) as memory, ingest_progress(not quiet) as progress:
        report = memory.ingest_file(files, conversation, skip_invalid,
                                    progress=progress, window=window, sem_k=sem_k, replace=replace,
                                    from_format=from_format, all_branches=all_branches, workers=workers)
    _print_ingest_report(report, json_out)


def _print_ingest_report(report, json_out: bool) -> None:
    """The summary of `ingest` and `import`; exit 3 when lines were skipped or turns left pending."""
    from dataclasses import asdict

    from .render import render_ingest_report, write_json

    data = asdict(report)
    data["seconds"] = round(report.seconds, 3)
    data["stage_seconds"] = {k: round(v, 3) for k, v in report.stage_seconds.items()}
    data["db"] = _db_shown()
    if json_out:
        write_json(data)
    else:
        render_ingest_report(data)
    if report.pending or report.invalid or report.conflicts:
        raise typer.Exit(EXIT_PARTIAL)


# --------------------------------------------------------------------- ask
@app.command()
def ask(
    question: str = typer.Argument(..., help="The question."),
    conversation: list[str] | None = typer.Option(
        None, "--conversation", "-c", metavar="NAME|TITLE",
        help="Search only this conversation: its name, its title or their start, when that names one chat; "
             "repeatable. Default: every conversation in memory."),
    top_m: int = typer.Option(DEFAULT_TOP_M, min=1, max=4096, help="Cues retrieved; their turns are the anchors."),
    window: int = typer.Option(ASK_WINDOW, min=0, help="Temporal neighbours per side (≤ the window built)."),
    sem_k: int = typer.Option(ASK_SEM_K, min=0, help="Semantic neighbours of rank ≤ k (≤ the k built)."),
    budget: int = typer.Option(DEFAULT_BUDGET, min=50, help="Evidence budget in tokens (≈ characters / 4)."),
    no_graph: bool = typer.Option(False, "--no-graph", help="Anchors only: no graph expansion (the paper's ablation)."),
    excerpt: int = typer.Option(DEFAULT_EXCERPT_TOKENS, "--excerpt", min=0,
                                help="A turn longer than this many tokens shows only its sentences nearest the "
                                     "question (0: every turn whole)."),
    as_of: str | None = typer.Option(
        None, help="Answer as of TIME: the question time, and memory as it was then (turns dated later, or "
                   "undated turns stored later, are left out). Default: now, everything."),
    model: str | None = typer.Option(None, "--model", "-m",
                                     help="litellm model for the answer (default $CUEMEM_MODEL; none: offline "
                                          "extractive answer)."),
    context_only: bool = typer.Option(False, "--context-only", help="Print only the evidence; call no model."),
    answerer: str | None = typer.Option(None, help="llm, extractive, or a registered name (default: llm with "
                                                      "a model, else extractive)."),
    embedder: str | None = typer.Option(None, help="Query embedder; must match the DB's model."),
    evidence: str | None = typer.Option(
        None, "--evidence", metavar="N|all",
        help=f"Evidence turns to show: the N highest-scoring, each with the turns said just before and after it, "
             f"or all (default {DEFAULT_EVIDENCE_SHOWN}; all with --context-only). The model reads all of them; "
             "--json has all."),
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="Show each evidence turn's id, how it came in and its best cue, and the "
                                      "timings (on stderr)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Answer a question from memory, showing the evidence turns it used.

    The question ranges over every conversation in memory unless --conversation narrows it; evidence from
    several chats is shown in the order it was said, under each chat's title (or name) and day. The
    evidence comes first and the answer last, so the answer stays on screen; on a terminal, output longer
    than the screen goes through $PAGER (else less), never in a pipe or with --json.
    """
    from ..errors import LLMError
    from ..recall.settings import Settings
    from ..store.base import kinds_missing
    from .render import AskOutput, err

    output = AskOutput(_evidence_shown(evidence, context_only), verbose, json_out)
    scope = conversation or None
    settings = Settings(top_m=top_m, window=window, sem_k=sem_k, budget=budget, graph=not no_graph,
                        excerpt_tokens=excerpt)
    chosen_model = config.answer_model(model)
    stream = bool(chosen_model and not json_out and sys.stdout.isatty())
    failure: LLMError | None = None
    memory: Memory = _memory(embedder=embedder)  # typed: a reader (or a call-graph tool) follows memory.ask
    with memory:
        if context_only:
            context, answer = memory.context(question, scope, settings, as_of), None
        else:
            try:
                result = memory.ask(question, scope, settings, as_of, chosen_model, answerer=answerer,
                                    on_token=output.token if stream else None,
                                    on_context=output.before_stream if stream else None)
                context, answer = result.context, result.answer
            except LLMError as exc:  # the evidence is still worth showing: rebuild it (deterministic, ms)
                failure, answer = exc, None
                context = memory.context(question, scope, settings, as_of)
        untagged = bool(context.kinds) and kinds_missing(memory.store)
    output.finish(context, answer, None if failure is None else failure.message)
    if untagged:
        err.print("note: this memory's turns carry no kinds of things yet (it was written by an older cuemem), so "
                  f"turns naming a {' or '.join(context.kinds)} were found by their words alone; run `cuemem "
                  "reindex` once to tag them")
    if failure is not None:
        sys.stdout.flush()
        raise failure


def _evidence_shown(value: str | None, context_only: bool) -> int | None:
    """--evidence: a count of strongest turns, or None for all."""
    if value is None:
        return None if context_only else DEFAULT_EVIDENCE_SHOWN
    if value == "all":
        return None
    if not (value.isascii() and value.isdigit()):
        raise typer.BadParameter(f"{value!r} is neither a number of turns nor all", param_hint="--evidence")
    return int(value)


# ----------------------------------------------------------- inspect-graph
@app.command("inspect-graph")
def inspect_graph(
    conversation: str | None = typer.Option(None, "--conversation", "-c", metavar="NAME|TITLE",
                                            help="Limit to one conversation (its name, its title or their start, "
                                                 "naming one)."),
    turn: str | None = typer.Option(None, "--turn", help="Show one turn (by its source id, in whichever conversation "
                                                         "has it; -c when several do), its cues and neighbours "
                                                         "(with dot or graphml: its neighbourhood graph)."),
    fmt: str = typer.Option("table", "--format", metavar="FORMAT",
                            help="table, json, dot (Graphviz) or graphml (Gephi)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON on stdout (the same as --format json)."),
) -> None:
    """Show what memory holds: per-conversation counts and titles, one turn's neighbourhood, or the whole graph
    (semantic edges cross conversations).

    In a pipe or a file the tables are tab-separated values, every value whole (--json for all counts)."""
    from ..manage import inspect as inspector
    from ..store.base import names_indexed
    from .render import (err, graph_dot, graph_graphml, out, render_changes, render_graph_summary, render_turn,
                         write_json)

    if fmt not in ("table", "json", "dot", "graphml"):
        raise typer.BadParameter("use table, json, dot or graphml", param_hint="--format")
    if json_out:
        if fmt not in ("table", "json"):
            raise typer.BadParameter(f"--json prints JSON, --format {fmt} asks for {fmt}: give one of them",
                                     param_hint="--json")
        fmt = "json"
    with _memory() as memory:
        store = memory.store
        if fmt in ("dot", "graphml"):
            if turn is not None:
                name, turns, edges = inspector.neighbourhood(store, conversation, turn)
            else:
                name, turns, edges = inspector.graph_of(store, conversation)
            out.file.write(graph_dot(name, turns, edges) if fmt == "dot" else graph_graphml(name, turns, edges))
            return
        if turn is not None:
            detail = inspector.turn_detail(store, conversation, turn)
            if fmt == "json":
                write_json(detail)
            else:
                render_turn(detail)
            return
        summary = inspector.summary(store, conversation, graph=fmt == "json")
        unindexed = not names_indexed(store)
    if fmt == "json":
        write_json(summary)
    else:
        render_graph_summary(summary["conversations"], summary["settings"])
        render_changes(summary["changes"], summary["settings"]["stale"])
    if unindexed:  # the names were learned from every turn, as an older cuemem stored them
        err.print("note: this memory's names were learned again from all its turns, which takes long on a large "
                  "memory; run `cuemem reindex` once to keep them")


# ---------------------------------------------------------------- convert
def _convert(fmt: str, files: list[str], all_branches: bool = False) -> None:
    import orjson

    from ..input.convert import convert

    write = sys.stdout.buffer.write if hasattr(sys.stdout, "buffer") else None
    for message in convert(fmt, files, all_branches):
        line = orjson.dumps(message.to_json()) + b"\n"
        if write:
            write(line)
        else:
            sys.stdout.write(line.decode())
    sys.stdout.flush()


def _add_convert_command(fmt: Format) -> None:
    """`cuemem convert NAME FILE...` for one entry of input.formats.FORMATS, its help from the entry."""
    files_argument = typer.Argument(..., help=fmt.files, metavar="FILE")
    if fmt.branches:
        def command(files: list[str] = files_argument,
                    all_branches: bool = typer.Option(False, "--all-branches", help="Every edited or regenerated "
                                                      "branch, not only the one kept (current_node).")) -> None:
            _convert(fmt.name, files, all_branches)
    else:
        def command(files: list[str] = files_argument) -> None:  # type: ignore[misc]  # the other signature
            _convert(fmt.name, files)
    convert_app.command(fmt.name, help=fmt.summary)(command)


for _format in FORMATS.values():
    _add_convert_command(_format)


# ---------------------------------------------------------------- extract
@app.command()
def extract(
    pending: bool = typer.Option(False, "--pending", help="Retry the turns whose LLM extraction failed."),
    extract_model: str | None = typer.Option(None, help="litellm model (default: the one that failed)."),
    conversation: str | None = typer.Option(None, "--conversation", "-c", help="Limit to one conversation."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
) -> None:
    """Re-run cue extraction for pending turns and link them into the graph."""
    from ..text import plural
    from .render import err, write_json

    if not pending:
        raise typer.BadParameter("only --pending is supported: it retries failed extractions", param_hint="--pending")
    with _memory() as memory:
        report = memory.extract_pending(extract_model, conversation)
    if json_out:
        write_json(report)
    else:
        err.print(f"completed {plural(report['completed'], 'pending turn')}; {len(report['still_pending'])} still "
                  "pending")
    if report["still_pending"]:
        raise typer.Exit(EXIT_PARTIAL)


# ----------------------------------------------------------------- forget
@app.command()
def forget(
    conversation: str | None = typer.Option(
        None, "--conversation", "-c", metavar="NAME|TITLE",
        help="Forget this conversation (alone: all of it), or limit the other options to it; its name, or a title "
             "naming one chat."),
    session: str | None = typer.Option(
        None, "--session", help="Forget one session (needs --conversation when the DB holds several)."),
    turn: list[str] | None = typer.Option(
        None, "--turn", metavar="SOURCE_ID",
        help="Forget a turn by its source id; repeatable (needs --conversation when the DB holds several)."),
    before: str | None = typer.Option(
        None, "--before", metavar="TIME", help="Forget turns whose time is earlier than TIME (undated turns stay)."),
    decay: float | None = typer.Option(
        None, "--decay", metavar="DAYS",
        help="Forget turns dated over DAYS before --as-of that no ask used within those DAYS (undated turns: age "
             "from when their conversation was stored)."),
    lru: int | None = typer.Option(
        None, "--lru", metavar="N",
        help="Keep the N most recently retrieved turns of each conversation; forget the rest."),
    as_of: str | None = typer.Option(None, "--as-of", metavar="TIME", help="The 'now' of --decay (default: now)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only count what would be forgotten."),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Do not ask for confirmation (needed when stdin is not a terminal)."),
    vacuum: bool = typer.Option(
        False, "--vacuum", help="Then rebuild the file and empty its WAL: no byte of forgotten text stays on disk "
                                "(PostgreSQL: VACUUM, see docs/postgres.md)."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON report on stdout."),
) -> None:
    """Forget turns with their cues, vectors and edges (the paper's DELETE); selectors combine with AND.

    --decay and --lru apply within what the other options select, per conversation. Turns are counted
    first and nothing is deleted without a yes (a prompt on a terminal, else --yes). Re-ingesting the
    source file brings forgotten turns back.
    """
    from ..manage import forget as forgetting
    from .render import err, write_json

    def confirm(report) -> bool:
        if yes:
            return True
        if not forgetting.stdin_is_terminal():
            raise CuememError(
                f"nothing forgotten: nobody confirmed (standard input is not a terminal); it would forget "
                f"{report.summary(done=False)}", "add --yes to confirm, or --dry-run to only count")
        err.print(f"About to forget {plain(report.summary(done=False))}.")
        return typer.confirm("Forget them? This cannot be undone", default=False, err=True)

    with _memory() as memory:
        report = memory.forget(conversation, session, turn or (), before, decay, lru, as_of, dry_run=dry_run,
                               vacuum=vacuum, confirm=confirm)
    if json_out:
        write_json(report.to_json())
    elif report.dry_run:
        err.print(f"would forget {plain(report.summary(done=False))} (dry run: nothing changed)")
    elif report.cancelled:
        err.print("nothing forgotten")
    elif report.applied:
        err.print(f"forgot {plain(report.summary())}" + ("; file scrubbed" if report.vacuumed else ""))
    else:
        err.print("nothing matches: nothing forgotten" + ("; file scrubbed" if report.vacuumed else ""))
    db = memory.path
    if report.vacuumed and isinstance(db, Path):  # SQLite
        backups = sorted(str(p) for p in db.parent.glob(f"{db.name}.bak-schema*"))
        if backups:
            err.print(f"[yellow]note:[/yellow] backups made before schema upgrades still hold old data: "
                      f"{plain(', '.join(backups))}; delete them if you no longer need them")


# ---------------------------------------------------------- export, import
@app.command()
def export(
    conversation: str | None = typer.Option(
        None, "--conversation", "-c", metavar="NAME|TITLE",
        help="Export one conversation, by its name, its title or their start, naming one (default: all)."),
    output: str | None = typer.Option(None, "--output", "-o", metavar="FILE",
                                      help="Write to a new file (created 0600) instead of stdout; - is stdout."),
) -> None:
    """Write turns and their cues as JSONL (`cuemem import` re-creates them; `cuemem ingest` reads it too)."""
    from contextlib import closing

    from ..manage.export import open_private_output, write_export
    from ..text import plural
    from .render import err

    # closing: a reader that stops early leaves the records' read snapshot to end before the store does
    with _memory() as memory, closing(memory.export(conversation)) as records:
        if output and output != "-":
            with open_private_output(output) as fh:
                count = write_export(records, fh)
            err.print(f"exported {plural(count, 'turn')} to {plain(output)}")
        else:
            sys.stdout.flush()
            write_export(records, sys.stdout.buffer)


@app.command("import")
def import_(
    file: str = typer.Argument(..., help="A `cuemem export` file, or - for standard input."),
    embedder: str | None = typer.Option(None, help=config.EMBEDDER_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
) -> None:
    """Re-create turns from a `cuemem export` file with their recorded cues (no extraction), embed and link them."""
    from .render import ingest_progress

    with _memory(create=True, embedder=embedder) as memory, ingest_progress(not quiet) as progress:
        report = memory.import_file(file, progress=progress)
    _print_ingest_report(report, json_out)


@app.command()
def reindex(
    only: list[str] = typer.Option([], "--only", metavar="INDEX",
                                   help="Rebuild only this derived index (names, changes, kinds); repeat for several."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON report on stdout."),
) -> None:
    """Build again what is derived from the stored turns (names: who is who, the names each chat calls its
    people by; changes: the facts a later turn changed; kinds: the kinds of things each turn names), which a
    memory written by an older cuemem lacks. Safe to run again; other processes may keep reading and writing
    meanwhile."""
    from ..text import plural
    from .render import err, write_json

    with _memory() as memory:
        report = memory.reindex(only or None)
    if json_out:
        write_json(report)
        return
    for name, done in report.items():
        err.print(f"{name}: {plural(done['conversations'], 'conversation')}, {plural(done['turns'], 'turn')} read"
                  f" in {done['seconds']:.1f} s")


# -------------------------------------------------------------------- mcp
@app.command()
def mcp(
    allow_forget: bool = typer.Option(False, "--allow-forget",
                                      help="Offer the forget tool: connected agents may then delete turns."),
    model: str | None = typer.Option(None, "--model", "-m",
                                        help="litellm model of the ask tool (default $CUEMEM_MODEL; none: ask "
                                             "answers extractively and says so)."),
    extractor: str = typer.Option("spacy", help="Cue extractor of remember: spacy (offline rules), llm, or a "
                                                "registered name."),
    extract_model: str | None = typer.Option(None, help="litellm model for --extractor llm."),
) -> None:
    """Serve this memory to agents over the Model Context Protocol (stdio): remember, recall, ask,
    list_conversations (and forget with --allow-forget). Logs go to stderr; see docs/mcp.md."""
    try:
        import mcp as _sdk  # noqa: F401  (the optional extra; imported here, never by `cuemem --help`)
    except ImportError:
        raise CuememError("`cuemem mcp` needs the MCP SDK (the Python package `mcp`), which is not installed",
                          "pip install 'cuemem[mcp]'") from None
    from ..mcp_server import serve

    serve(state.db, allow_forget=allow_forget, model=config.answer_model(model), extractor=extractor,
          extract_model=extract_model)


# ----------------------------------------------------------------- browse
@app.command()
def browse(
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port on 127.0.0.1 (default: a free one)."),
    no_open: bool = typer.Option(False, "--no-open", help="Print the address only; do not open a web browser."),
    model: str | None = typer.Option(None, "--model", "-m",
                                     help="litellm model of the question box's answers (default $CUEMEM_MODEL; "
                                          "none: offline extractive answers)."),
) -> None:
    """Read this memory in a web browser: conversations (searchable), each read as a chat with its cues, a
    question box showing the evidence `ask` would hand a model and the answer, and graph pictures.

    Serves 127.0.0.1 only, read-only, at an address holding a random token (printed on stdout); Ctrl-C
    stops it. Needs the extra cuemem[browse]; see docs/browse.md.
    """
    try:
        import jinja2  # noqa: F401  (the optional extra; imported here, never by `cuemem --help`)
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise CuememError(f"`cuemem browse` needs the web packages of the browse extra ({exc.name} is not "
                          "installed)", "pip install 'cuemem[browse]'") from None
    from ..browse.server import serve

    with _memory() as memory:
        serve(memory, port=port, open_browser=not no_open, model=config.answer_model(model),
              db_shown=_db_shown())


def run() -> None:
    """Console-script entry point."""
    try:
        app()
    finally:
        try:  # what is still buffered, while a broken pipe can be told from other failures
            sys.stdout.flush()
        except BrokenPipeError:
            _discard_stdout()


if __name__ == "__main__":  # pragma: no cover
    run()
