"""`cuemem eval locomo|longmemeval FILE`: parse options, run `evaluate.runner`, print the table.

Exit codes: 0 done; 1 an error cuemem explains (or a model that kept failing: partial results are
still written), printed by cli/app.py's command group as every command's; 130 interrupted with Ctrl-C
(partial results written).
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from ..config import ASK_SEM_K, ASK_WINDOW, DEFAULT_BUDGET, DEFAULT_TOP_M, EMBEDDER_HELP
from ..errors import CuememError

EXIT_INTERRUPTED = 130

eval_app = typer.Typer(
    help="Measure CueMem, its ablations and baselines on LoCoMo and LongMemEval in one run: evidence recall, "
         "context tokens, latency, and QA accuracy with an answerer and a judge.",
    no_args_is_help=True,
)


def _shared_options(
    systems: str | None = typer.Option(
        None, "--systems", help="Comma-separated: cuemem, no-graph, no-semantic, no-temporal, full-history, naive-rag, "
                                "bm25 (the default), and the ablations no-lexical, no-speaker, no-date, cue-only, "
                                "turn-only, no-context, mixed-context, whole-turns."),
    budget: list[int] | None = typer.Option(
        None, "--budget", help="Evidence budget in tokens (≈ characters / 4); repeat for several (default: ask's, "
                               f"{DEFAULT_BUDGET})."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Evaluate only the first N questions."),
    extractor: str = typer.Option("spacy", help="Cue extractor for ingest: spacy or llm."),
    extract_model: str | None = typer.Option(None, help="litellm model for --extractor llm."),
    embedder: str | None = typer.Option(None, help=EMBEDDER_HELP),
    top_m: int | None = typer.Option(None, "--top-m", min=1, max=4096,
                                     help=f"Cues retrieved (default: ask's, {DEFAULT_TOP_M})."),
    window: int | None = typer.Option(None, "--window", min=0,
                                      help=f"Temporal neighbours per side (default: ask's, {ASK_WINDOW})."),
    sem_k: int | None = typer.Option(None, "--sem-k", min=0,
                                     help=f"Semantic neighbours of rank ≤ k (default: ask's, {ASK_SEM_K})."),
    model: str | None = typer.Option(None, "--model", "-m", help="Answerer, any litellm model (default: retrieval "
                                                                 "only; $CUEMEM_MODEL is not read here)."),
    judge_model: str | None = typer.Option(None, "--judge-model", help="Judge, any litellm model (needs --model)."),
    no_priority: bool = typer.Option(False, "--ablation-no-priority",
                                     help="Answer without the recency instruction (the paper's second ablation)."),
    workers: int = typer.Option(4, "--workers", min=1, help="Parallel LLM calls per question."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Where ingested databases are cached (default: "
                                                                    "the per-user cache dir, …/cuemem/eval)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Ingest again even if a cached database exists."),
    store: str | None = typer.Option(None, "--store", help="Evaluate on this PostgreSQL database (postgresql://…, "
                                                           "empty or holding this same eval) instead of the SQLite "
                                                           "cache."),
    offline_answers: bool = typer.Option(
        False, "--offline-answers", help="Also answer each question offline, as `ask` does without a model, and "
                                         "report the share whose answer line (its first line), and whose whole "
                                         "answer, hold every content word of the gold answer, the line's token F1, "
                                         "and how often it gives no answer."),
    out: Path | None = typer.Option(None, "--out", help="Write the summary and every per-question record as JSON."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout instead of the table."),
) -> None:
    """The options every eval command takes, after its own: their declaration, read by `eval_options`."""


def eval_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command` (whose `**shared` receives them) the options of `_shared_options`, after its own, as
    Typer reads a signature (sqlite-utils' `output_options` does the same for click)."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.kind != p.VAR_KEYWORD]
    params = own + list(inspect.signature(_shared_options, eval_str=True).parameters.values())

    @functools.wraps(command)
    def with_options(**options: Any) -> None:
        command(**options)

    with_options.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in params}
    return with_options


@eval_app.command("locomo")
@eval_options
def locomo(
    file: Path = typer.Argument(..., help="LoCoMo JSON, e.g. ../shared/data/locomo10.json."),
    conversations: list[str] | None = typer.Option(None, "--conversations",
                                                   help="Sample ids, comma-separated or repeated (conv-26,…)."),
    adversarial: bool = typer.Option(False, "--adversarial", help="Add category 5 (judged as abstention)."),
    setting: str = typer.Option(
        "one-conversation", "--setting", metavar="one-conversation|as-exports",
        help="one-conversation: each sample is one conversation and its questions are asked in it. as-exports: "
             "every session of every sample is its own conversation (conv-26/session_3, titled by its speakers), "
             "all in ONE memory, and every question is asked over the whole memory, as of a chat export; "
             "baselines search the whole memory too. With --conversations the memory holds those samples' "
             "sessions only (a database of its own)."),
    **shared: Any,
) -> None:
    """LoCoMo: categories 1–4 (multi-hop, temporal, open-domain, single-hop; the standard 1,540 questions)."""
    _run("locomo", file=file, conversations=conversations, adversarial=adversarial, setting=setting, **shared)


@eval_app.command("longmemeval")
@eval_options
def longmemeval(
    file: Path = typer.Argument(..., help="LongMemEval JSON, e.g. longmemeval_s.json."),
    conversations: list[str] | None = typer.Option(None, "--questions", "--conversations",
                                                   help="Question ids, comma-separated or repeated."),
    setting: str = typer.Option(
        "one-conversation", "--setting", metavar="one-conversation|as-exports",
        help="Each haystack is a memory of its own (a database per haystack, in a folder of the cache). "
             "one-conversation: the haystack is one conversation and the question is asked in it. as-exports: "
             "the haystack is one person's chat export, every session a chat titled by its first user message's "
             "opening words, and the question is asked over all of them with none named; baselines search that "
             "memory too (not with --store, which is one memory)."),
    **shared: Any,
) -> None:
    """LongMemEval: each question's haystack a memory of its own, one conversation (or, --setting as-exports, a chat
    per session); types reported apart, `_abs` as abstention."""
    _run("longmemeval", file=file, conversations=conversations, setting=setting, **shared)


def _split(values: list[str] | str | None) -> tuple[str, ...]:
    if not values:
        return ()
    items = [values] if isinstance(values, str) else values
    return tuple(part.strip() for item in items for part in item.split(",") if part.strip())


def _run(dataset: str, **options: Any) -> None:
    from ..evaluate.runner import EvalConfig, run
    from ..evaluate.systems import DEFAULT_SYSTEMS

    config = EvalConfig(
        dataset=dataset, file=options["file"], systems=_split(options["systems"]) or DEFAULT_SYSTEMS,
        budgets=tuple(options["budget"] or ()), top_m=options["top_m"], window=options["window"],
        sem_k=options["sem_k"], conversations=_split(options["conversations"]), limit=options["limit"],
        adversarial=options.get("adversarial", False), extractor=options["extractor"],
        extract_model=options["extract_model"], embedder=options["embedder"], model=options["model"],
        judge_model=options["judge_model"], priority=not options["no_priority"], workers=options["workers"],
        cache_dir=options["cache_dir"], rebuild=options["rebuild"], offline_answers=options["offline_answers"],
        store_url=options["store"], setting=options.get("setting") or "one-conversation",
    )
    try:
        with progress_display(sys.stderr.isatty()) as progress:
            result = run(config, progress=progress)
    except KeyboardInterrupt:  # before the database was open: nothing to keep
        sys.stderr.write("interrupted before evaluation started\n")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    summary = result.summary
    if options["out"]:
        _write(options["out"], result.to_json())
    _report(summary, options["out"])
    if options["json_out"]:
        from .render import write_json

        write_json(summary)
    else:
        render_summary(summary)
    if summary.get("error"):
        raise CuememError(summary["error"], "partial results were kept; check the model and run again")
    if result.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)


def _write(path: Path, data: dict[str, Any]) -> None:
    """Atomically: a crash while writing never leaves half a JSON file where a result was."""
    import orjson

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    os.replace(tmp, path)


def _report(summary: dict[str, Any], out: Path | None) -> None:
    from ..text import plural
    from .render import err, escape

    ingest = summary["ingest"]
    several = summary.get("database_per_memory", False)
    where = f"{plural(summary['memories'], 'memory', 'memories')} in" if several else "database"
    err.print(f"[dim]{where} {escape(summary['database'])}: {plural(len(ingest['cached']), 'conversation')} "
              f"cached, {len(ingest['ingested'])} ingested ({plural(ingest['turns_added'], 'turn')}, "
              f"{plural(ingest['cues'], 'cue')}, {ingest['seconds']} s)[/dim]")
    if ingest["superseded_removed"]:
        err.print(f"[dim]removed {plural(len(ingest['superseded_removed']), 'cached database')} built by another "
                  f"version of the ingest code, which this one never reads: {ingest['superseded_bytes'] / 1e6:.0f} MB "
                  "freed[/dim]")
    if ingest["pending"]:
        again = "cuemem --db DATABASE extract --pending on each database there" if several \
            else f"cuemem --db {escape(summary['database'])} extract --pending"
        err.print(f"[yellow]{plural(len(ingest['pending']), 'turn')} pending (their LLM extraction failed); retry with "
                  f"{again}[/yellow]")
    problems = summary["evidence_problems"]
    for p in problems[:12]:
        err.print(f"[yellow]evidence[/yellow] {escape(p['question_id'])}: {escape(repr(p['evidence']))} "
                  f"{p['problem']}, {escape(p['action'])}")
    if len(problems) > 12:
        err.print(f"[yellow]… {plural(len(problems) - 12, 'more evidence note')} in the summary[/yellow]")
    if summary["interrupted"]:
        err.print(f"[yellow]interrupted after {summary['questions']} of {summary['questions_selected']} questions; "
                  "the results cover those[/yellow]")
    if out:
        err.print(f"[dim]wrote {escape(str(out))}[/dim]")


@contextmanager
def progress_display(tty: bool):
    """A rich bar with ETA on a terminal; otherwise a plain line on stderr every ~10 s."""
    if tty:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from .render import err

        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=err) as bar:
            tasks: dict[str, Any] = {}

            def update(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task("ingest turns" if phase == "ingest" else "questions", total=total)
                bar.update(tasks[phase], completed=done, total=total)

            yield update
        return
    started: dict[str, float] = {}
    last = [0.0]

    def log(phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        started.setdefault(phase, now)
        if done and done < total and now - last[0] < 10:
            return
        last[0] = now
        elapsed = now - started[phase]
        eta = f", ETA {elapsed / done * (total - done):.0f} s" if done and done < total else ""
        sys.stderr.write(f"eval {phase}: {done}/{total} ({elapsed:.0f} s{eta})\n")
        sys.stderr.flush()

    yield log


def _console():
    """stdout's console; piped into a file it is made wide enough that the table stays one line per row."""
    from rich.console import Console

    from .render import out

    if out.is_terminal or "COLUMNS" in os.environ:
        return out
    return Console(highlight=False, soft_wrap=False, width=180)


_SHORT = {"single-session-user": "ss-user", "single-session-assistant": "ss-assistant",
          "single-session-preference": "ss-preference", "temporal-reasoning": "temporal",
          "knowledge-update": "k-update"}


def _short(category: str) -> str:
    """LongMemEval's type names, shortened for the table (the JSON keeps them whole)."""
    return _SHORT.get(category, category)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _num(value: Any, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def render_summary(summary: dict[str, Any]) -> None:
    """Per budget, one row per system × category (full-history, unbudgeted, appears in each)."""
    from rich.table import Table

    out = _console()
    rows = summary["rows"]
    tokenizers = list(summary["tokenizers"])
    judged = any(r["judged"] for r in rows)
    answered = any(r["answer_ms"] for r in rows)
    offline = any(r.get("offline_scored") for r in rows)
    lme = summary["dataset"] == "longmemeval"
    for budget in summary["budgets"]:
        shown = [r for r in rows if r["budget"] in (budget, None)]
        table = Table(title=f"{summary['dataset']} · budget {budget} tokens · {summary['questions']} questions"
                            + (" (interrupted)" if summary["interrupted"] else ""), title_justify="left")
        for header in ("system", "category", "n", "all-ev%", "recall%", "any-ev%"):
            table.add_column(header, justify="left" if header in ("system", "category") else "right")
        labels = {"estimate": "tok≈", "wordpiece": "tok WP", "cl100k_base": "cl100k"}
        for name in tokenizers:
            table.add_column(labels.get(name, name), justify="right")
        table.add_column("max≈", justify="right")
        table.add_column("p50 ms", justify="right")
        table.add_column("p95 ms", justify="right")
        if answered:
            table.add_column("ans p50", justify="right")
        if offline:
            for header in ("line%", "line F1", "block%", "none%"):
                table.add_column(header, justify="right")
        if judged:
            table.add_column("acc%", justify="right")
            table.add_column("judged", justify="right")
            table.add_column("LLM tok", justify="right")
        previous = None
        for r in shown:
            system = r["system"]
            if previous is not None and previous != system:
                table.add_section()
            previous = system
            cells = [system, _short(r["category"]), str(r["retrieval_questions"]), _pct(r.get("all_evidence")),
                     _pct(r.get("recall")), _pct(r.get("any_evidence"))]
            cells += [_num(r["tokens"].get(name)) for name in tokenizers]
            cells.append(_num((r.get("tokens_max") or {}).get("estimate")))
            recon = r["reconstruct_ms"] or {}
            cells += [_num(recon.get("p50"), 1), _num(recon.get("p95"), 1)]
            if answered:
                cells.append(_num((r["answer_ms"] or {}).get("p50"), 0))
            if offline:
                cells += [_pct(r.get("offline_line_accuracy")), _num(r.get("offline_line_f1"), 2),
                          _pct(r.get("offline_accuracy")), _pct(r.get("offline_abstained"))]
            if judged:
                cells += [_pct(r["accuracy"]), str(r["judged"]),
                          _num(r["llm_tokens"]["answer"] + r["llm_tokens"]["judge"])]
            table.add_row(*cells)
        out.print(table)
        if lme:
            _render_sessions(out, shown, budget)
    tokenizer_notes = "; ".join(f"{k}: {v}" for k, v in summary["tokenizers"].items())
    settings = ", ".join(f"{k}={v}" for k, v in summary["settings"].items())
    out.print(f"[dim]n = questions with gold evidence (retrieval metrics); tokens = mean per question "
              f"({tokenizer_notes}); max≈ = the largest context of one question (estimate); "
              f"p50/p95 ms = reconstruction latency (query embedding + search + expansion); "
              f"full-history is unbudgeted. "
              + ("Offline answers: line% = the answer line holds every content word of the gold answer, line F1 its "
                 "token F1, block% = the line and its quoted sources hold them, none% = no answer (on adversarial "
                 "questions the right one). " if offline else "")
              + f"Settings: {settings}; "
              f"graph built with window={summary['graph_built']['window']}, sem_k={summary['graph_built']['sem_k']}; "
              f"extractor {summary['extractor']}; embedder {summary['embedder']['model']} "
              f"({summary['embedder']['backend']}); {summary['elapsed_s']} s.[/dim]")


def _render_sessions(out, rows: list[dict[str, Any]], budget: int) -> None:
    from rich.table import Table

    table = Table(title=f"longmemeval · budget {budget} · turn NDCG and session-level recall", title_justify="left")
    for header in ("system", "category", "n", "turn NDCG", "session any %", "session all %", "session NDCG"):
        table.add_column(header, justify="left" if header in ("system", "category") else "right")
    for r in rows:
        table.add_row(r["system"], _short(r["category"]),
                      str(r["retrieval_questions"]), _num(r.get("turn_ndcg"), 3), _pct(r.get("session_recall_any")),
                      _pct(r.get("session_recall_all")), _num(r.get("session_ndcg"), 3))
    out.print(table)
