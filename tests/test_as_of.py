"""`ask --as-of T` answers from what memory held at T: nothing said (or, undated, stored) after T."""

from __future__ import annotations

import orjson
import pytest

from conftest import SAMPLES

pytestmark = pytest.mark.slow
MAYA = SAMPLES / "maya_and_leo.jsonl"


def _evidence(cli, *args):
    result = cli("ask", "Where does Maya live?", "-c", "maya-and-leo", "--context-only", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)["evidence"]


def test_as_of_leaves_out_turns_said_later(cli):
    assert cli("ingest", str(MAYA)).exit_code == 0
    now = _evidence(cli)
    assert any("Denver" in e["text"] and e["time"] >= "2023-10-01" for e in now)  # the move, said in October

    before = _evidence(cli, "--as-of", "2023-06-01")
    assert before and all(e["time"] <= "2023-06-01T00:00:00" for e in before)
    assert any("Portland" in e["text"] for e in before)
    assert not any(e["source_id"].startswith(("s3:", "s4:")) for e in before)


def test_as_of_judges_undated_turns_by_when_they_were_stored(cli, tmp_path):
    lines = [{"conversation": "notes", "speaker": "Maya", "text": "I live in Denver now.", "id": "n1"},
             {"conversation": "notes", "speaker": "Maya", "text": "My dog Biscuit is a beagle.", "id": "n2"}]
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    assert cli("ingest", str(path)).exit_code == 0

    held = cli("ask", "Where does Maya live?", "-c", "notes", "--context-only", "--json", "--as-of", "2999-01-01")
    assert [e["source_id"] for e in orjson.loads(held.stdout)["evidence"]][:1] == ["n1"]

    result = cli("ask", "Where does Maya live?", "-c", "notes", "--json", "--as-of", "2000-01-01")
    assert result.exit_code == 0, result.stderr
    data = orjson.loads(result.stdout)
    assert data["evidence"] == [] and data["cues"] == []


def test_library_context_filters_the_same_way(tmp_path):
    from cuemem_cli import Memory

    with Memory(tmp_path / "lib.db") as memory:
        memory.ingest_file(str(MAYA), None, False)
        times = [e.time for e in memory.context("Where does Maya live?", "maya-and-leo", as_of="2023-06-01").evidence]
    assert times and max(times) <= "2023-06-01T00:00:00"
