"""`ask` fits a terminal: the strongest evidence first, the answer last, a pager only on a terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import orjson
import pytest

from conftest import CUEMEM, SAMPLES, copy_memory

QUESTION = "What breed is the dog Maya adopted, and when?"
TURN_LINE = re.compile(r"^\s+(s\d+:\d+) · ")  # a turn's dim line below its text: its id, how it came in


@pytest.fixture(scope="module")
def maya_db(maya_memory, tmp_path_factory):
    """Maya & Leo as `cuemem ingest` stores it (conftest.maya_memory): which turns are strongest, and the
    extractive answer, are the real models' (ask's defaults)."""
    return copy_memory(maya_memory, tmp_path_factory.mktemp("maya"))


def evidence_of(cli, db, *args):
    result = cli("--db", str(db), "ask", QUESTION, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)["evidence"]


def shown_ids(stdout: str) -> list[str]:
    return [m.group(1) for line in stdout.splitlines() if (m := TURN_LINE.match(line))]


def expected_ids(evidence, top):
    """The documented rule, computed independently: the `top` highest scores, plus the turns at the
    positions just before and after each of them in the same session, when they are evidence too."""
    strongest = sorted(evidence, key=lambda e: -e["score"])[:top]
    by_position = {e["position"]: e for e in evidence}
    keep = {e["position"] for e in strongest}
    for e in strongest:
        for p in (e["position"] - 1, e["position"] + 1):
            if p in by_position and by_position[p]["session"] == e["session"]:
                keep.add(p)
    return [e["source_id"] for e in evidence if e["position"] in keep]


def test_ask_shows_the_strongest_turns_with_their_neighbours_and_the_answer_last(cli, maya_db):
    evidence = evidence_of(cli, maya_db)
    assert len(evidence) == 84  # the whole sample fits the budget: every turn is evidence
    result = cli("--db", str(maya_db), "ask", QUESTION, "--verbose")
    assert result.exit_code == 0, result.stderr
    ids = shown_ids(result.stdout)
    assert ids == expected_ids(evidence, 5)
    assert "s2:9" in ids  # "His name is Biscuit, he's a beagle" holds the answer
    assert 5 < len(ids) < 20
    assert f"{len(ids)} of 84 turns shown" in result.stdout and "--evidence all" in result.stdout
    left_out = [int(n) for n in re.findall(r"⋯ (\d+) turns? not shown", result.stdout)]
    assert sum(left_out) == 84 - len(ids)
    lines = result.stdout.rstrip("\n").splitlines()
    answer_top = next(i for i, line in enumerate(lines) if "extractive" in line)
    last_turn = max(i for i, line in enumerate(lines) if TURN_LINE.match(line))
    assert answer_top > last_turn  # the answer comes after every evidence turn ...
    assert lines[-1].startswith("╰")  # ... and its panel closes the output
    assert len(lines) < 70  # before: 219 lines with the answer on top
    plain = cli("--db", str(maya_db), "ask", QUESTION)
    assert len(plain.stdout.splitlines()) < len(lines) - 10  # without ids and cues: a line a turn, or its text's


@pytest.mark.usefixtures("stub_models")
def test_an_exports_uuid_ids_leave_the_text_its_width_at_80_columns(cli, db_path, tmp_path, monkeypatch):
    """A ChatGPT or Claude export's message ids are 36-character UUIDs: as a column of their own they left
    the text ~25 of 80 columns. With --verbose the id is whole on the turn's dim line below its text."""
    from cuemem_cli.cli import render

    uuid = "1d9f6eb2-9aef-5c09-ad7e-f62d810480f9"
    text = "I have decided to become a counselor and to work in mental health, helping people like me."
    source = tmp_path / "chat.jsonl"
    source.write_bytes(orjson.dumps({"conversation": "c", "id": uuid, "role": "user", "time": "2023-05-08T13:58:00",
                                     "text": text}) + b"\n")
    assert cli("--db", str(db_path), "ingest", str(source)).exit_code == 0
    monkeypatch.setattr(render.out, "width", 80)
    result = cli("--db", str(db_path), "ask", "What career did I decide on?", "--context-only", "--verbose")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    first = next(line for line in lines if "I have decided" in line)
    assert len(first.rstrip()) > 70 and "counselor and to work" in first  # the text has the width
    assert any(line.strip().startswith(f"{uuid} · ") for line in lines)  # the id, whole, below it


def test_evidence_count_and_all(cli, maya_db):
    evidence = evidence_of(cli, maya_db)
    every = cli("--db", str(maya_db), "ask", QUESTION, "--evidence", "all", "-v")
    assert shown_ids(every.stdout) == [e["source_id"] for e in evidence]
    assert "not shown" not in every.stdout and "84 turns ·" in every.stdout
    two = cli("--db", str(maya_db), "ask", QUESTION, "--evidence", "2", "-v")
    assert shown_ids(two.stdout) == expected_ids(evidence, 2)
    none = cli("--db", str(maya_db), "ask", QUESTION, "--evidence", "0", "-v")
    assert shown_ids(none.stdout) == [] and "0 of 84 turns shown" in none.stdout and "Biscuit" in none.stdout
    # --context-only prints what the model would read: all of it unless told otherwise
    context_only = cli("--db", str(maya_db), "ask", QUESTION, "--context-only", "-v")
    assert shown_ids(context_only.stdout) == shown_ids(every.stdout)
    # --json always carries every evidence turn, whatever --evidence says
    assert evidence_of(cli, maya_db, "--evidence", "1") == evidence


def test_the_note_on_hidden_turns_says_who_read_them(cli, maya_db, fake_llm):
    """No model ran offline: the note says the offline answer was drawn from all the evidence (not that a
    model read it), and nobody read it with --context-only. `--evidence 0` and 1 are said as such."""
    def note(*args: str) -> str:
        result = cli("--db", str(maya_db), "ask", QUESTION, *args)
        assert result.exit_code == 0, result.stderr
        return " ".join(result.stdout.split())

    offline = note()
    assert "the 5 strongest turns and the turns beside them; the offline answer was drawn from all 84" in offline
    assert "the model read" not in offline
    assert "; 84 in the evidence: --evidence all shows them" in note("--context-only", "--evidence", "3")
    fake_llm.default = lambda messages: "A beagle."
    assert "; the model read all 84: --evidence all shows them" in note("--model", "fake/answerer")
    none = note("--evidence", "0")
    assert "0 of 84 turns shown" in none and "none shown (--evidence 0)" in none and "the 0 strongest" not in none
    assert "the strongest turn and the turns beside it;" in note("--evidence", "1")


@pytest.mark.parametrize("value", ["some", "-1", "2.5"])
def test_a_bad_evidence_value_is_a_usage_error(cli, maya_db, value):
    result = cli("--db", str(maya_db), "ask", QUESTION, "--evidence", value)
    assert result.exit_code == 2
    assert "--evidence" in result.stderr


def test_an_llm_answer_is_printed_after_the_evidence(cli, maya_db, fake_llm):
    fake_llm.default = lambda messages: "A beagle named Biscuit, adopted on 6 May 2023."
    result = cli("--db", str(maya_db), "ask", QUESTION, "--model", "fake/answerer", "-v")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.rstrip("\n").splitlines()
    answer_at = next(i for i, line in enumerate(lines) if "A beagle named Biscuit" in line)
    assert answer_at > max(i for i, line in enumerate(lines) if TURN_LINE.match(line))


@pytest.mark.subprocess
def test_no_pager_in_a_pipe(cli, maya_db, tmp_path, monkeypatch):
    """Even when the output is far longer than any screen, a pipe gets it whole and no pager starts."""
    marker = tmp_path / "paged"
    monkeypatch.setenv("PAGER", f"cat > {marker}")
    monkeypatch.setenv("LINES", "10")
    result = cli("--db", str(maya_db), "ask", QUESTION, "--evidence", "all", "-v")
    assert len(shown_ids(result.stdout)) == 84
    assert not marker.exists()
    env = {**os.environ, "PAGER": f"cat > {marker}", "LINES": "10"}
    proc = subprocess.run([*CUEMEM, "--db", str(maya_db), "ask", QUESTION,
                           "--evidence", "all", "-v"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(shown_ids(proc.stdout)) == 84 and "extractive" in proc.stdout
    assert not marker.exists()


def test_the_pager_decision():
    from cuemem_cli.cli.render import needs_pager

    assert needs_pager(100, is_tty=True, height=24)
    assert not needs_pager(24, is_tty=True, height=24)  # exactly a screen: no pager
    assert not needs_pager(100, is_tty=False, height=24)  # a pipe or a file: never


def on_a_terminal(db, marker, *args) -> str:
    """Run `cuemem ask` on a pseudo-terminal 20 lines high, with $PAGER writing to `marker`; what the
    terminal showed, without colours."""
    import pty

    env = {**os.environ, "PAGER": f"cat > {marker}", "LINES": "20", "COLUMNS": "80"}
    main, secondary = pty.openpty()
    proc = subprocess.Popen([*CUEMEM, "--db", str(db), "ask", QUESTION, *args],
                            stdin=secondary, stdout=secondary, stderr=subprocess.DEVNULL, env=env)
    os.close(secondary)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=120) == 0
    os.close(main)
    return re.sub(r"\x1b\[[0-9;]*m", "", seen.decode())


@pytest.mark.subprocess
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_on_a_terminal_long_evidence_goes_through_the_pager_and_the_answer_follows(maya_db, tmp_path):
    """The evidence (longer than 20 lines) goes to $PAGER, the answer to the terminal after the pager quits."""
    marker = tmp_path / "paged"
    terminal = on_a_terminal(maya_db, marker, "-v")
    paged = re.sub(r"\x1b\[[0-9;]*m", "", marker.read_text())
    assert "Evidence · maya-and-leo" in paged and "s2:9" in paged
    assert "Offline answer (extractive)" in terminal and "Evidence ·" not in terminal


@pytest.mark.subprocess
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_on_a_terminal_output_that_fits_is_printed_without_a_pager(maya_db, tmp_path):
    marker = tmp_path / "paged"
    terminal = on_a_terminal(maya_db, marker, "--evidence", "0")
    assert not marker.exists()
    assert terminal.index("Evidence · maya-and-leo") < terminal.index("Offline answer (extractive)")


def test_a_streamed_answer_comes_after_the_evidence(cli, maya_db, monkeypatch):
    """On a terminal a model's answer streams as it arrives: the evidence is printed before the first token."""
    import typer.testing
    from test_cli_errors import streaming_model

    calls = [0]  # not the first call: the stream is whole
    streaming_model(monkeypatch, calls)
    monkeypatch.setattr(typer.testing._NamedTextIOWrapper, "isatty", lambda self: True, raising=False)
    result = cli("--db", str(maya_db), "ask", QUESTION, "--model", "stream/m")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("ZEBRA-one") == 1
    assert result.stdout.index("Evidence ·") < result.stdout.index("ZEBRA-one")
    assert result.stdout.rstrip().endswith("three")  # the answer is the last thing printed


@pytest.mark.usefixtures("stub_models")
def test_at_80_columns_the_evidence_reads_like_a_transcript(cli, db_path, monkeypatch):
    """By default a turn is its time, speaker and text: no line of ids and cues under each (which doubled the
    lines and repeated the sentence) and no timing line on stderr; --verbose shows both, --json has them."""
    from cuemem_cli.cli import render

    assert cli("--db", str(db_path), "ingest", str(SAMPLES / "maya_and_leo.jsonl")).exit_code == 0
    monkeypatch.setattr(render.out, "width", 80)
    plain = cli("--db", str(db_path), "ask", QUESTION, "--context-only", "--evidence", "all")
    verbose = cli("--db", str(db_path), "ask", QUESTION, "--context-only", "--evidence", "all", "--verbose")
    assert plain.exit_code == verbose.exit_code == 0
    evidence = evidence_of(cli, db_path, "--context-only")
    assert plain.stderr == "" and "ms" not in plain.stderr
    assert "embed_query" in verbose.stderr and "total" in verbose.stderr
    assert shown_ids(plain.stdout) == [] and " · anchor" not in plain.stdout and "cue (" not in plain.stdout
    assert shown_ids(verbose.stdout) == [e["source_id"] for e in evidence]
    lines = plain.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    turns = [line for line in lines if re.match(r"^\d{1,2}:\d\d [ap]m ", line)]
    assert len(turns) == len(evidence)  # each turn starts a line with its time and speaker
    said = next(e for e in evidence if e["source_id"] == "s2:9")
    first = next(line for line in turns if "His name is Biscuit" in line)
    assert first.split()[2] == said["speaker"] == "Maya"
    assert len(verbose.stdout.splitlines()) >= len(lines) + len(evidence)
