"""LLM cue extraction through a fake litellm provider: batching, validation, retries, pending, cache."""

from __future__ import annotations

import orjson
import pytest

from cuemem_cli.cues.llm import LLMExtractor, parse_reply
from cuemem_cli.records import Message


def asked(messages) -> list[dict]:
    lines = messages[-1]["content"].splitlines()[1:]
    return [orjson.loads(line) for line in lines]


def good_reply(messages) -> str:
    """What a well-behaved model answers: one cue per turn, or none for a turn marked POISON... unless cured."""
    turns = []
    for turn in asked(messages):
        if "POISON" in turn["text"]:
            continue
        turns.append({"id": turn["id"], "cues": [[turn["speaker"], "said", turn["text"].split()[0]]]})
    return orjson.dumps({"turns": turns}).decode()


def chat(n: int, poison: set[int] = frozenset()) -> list[Message]:
    return [
        Message("c", f"{'POISON ' if i in poison else ''}Turn number {i} about topic {i}", source_id=str(i),
                speaker="Ann" if i % 2 else "Bob", time=f"2024-01-0{1 + i % 9}T10:00:00")
        for i in range(n)
    ]


def test_parse_reply_keeps_only_valid_entries_for_asked_ids():
    reply = orjson.dumps({"turns": [
        {"id": "T1", "cues": [["Ann", "likes", "tea"]]},
        {"id": "T2", "cues": [["Ann", "likes"]]},  # malformed triple
        {"id": "T9", "cues": [["X", "is", "unasked"]]},  # not asked about
        {"id": "T3", "cues": []},
    ]}).decode()
    out = parse_reply("```json\n" + reply + "\n```", {"T1", "T2", "T3"})
    assert set(out) == {"T1", "T3"}
    assert out["T1"][0].object == "tea" and out["T3"] == []
    assert parse_reply("not json at all", {"T1"}) == {}
    assert parse_reply("", {"T1"}) == {}


def test_batches_several_turns_per_call(fake_llm, store):
    fake_llm.default = good_reply
    extractor = LLMExtractor("fake/x", store=store, batch_turns=10)
    results = extractor.extract(chat(25))
    assert extractor.calls == 3
    assert all(r is not None and len(r) == 1 for r in results)
    assert results[7][0].subject == "Ann" and results[7][0].object == "Turn"


def test_malformed_reply_is_retried(fake_llm, store):
    fake_llm.script = ["this is not JSON", '{"turns": [{"id": "T99", "cues": []}]}']
    fake_llm.default = good_reply
    extractor = LLMExtractor("fake/x", store=store, batch_turns=4)
    results = extractor.extract(chat(4))
    assert all(r is not None for r in results)
    # 4 turns: garbage; halves of 2: wrong ids, good; the failed half one turn at a time: 2 good.
    assert extractor.calls == 5


def test_transient_errors_are_retried(fake_llm, store):
    import litellm

    fake_llm.script = [litellm.RateLimitError("slow down", llm_provider="fake", model="x")]
    fake_llm.default = good_reply
    results = LLMExtractor("fake/x", store=store).extract(chat(3))
    assert all(r is not None for r in results)
    assert len(fake_llm.requests) == 2


def test_a_turn_that_keeps_failing_is_pending_not_dropped(fake_llm, store):
    fake_llm.default = good_reply
    results = LLMExtractor("fake/x", store=store, batch_turns=4, retries=2).extract(chat(4, poison={2}))
    assert results[2] is None
    assert all(results[i] is not None for i in (0, 1, 3))


def test_results_are_cached_by_model_prompt_and_turn(fake_llm, store):
    fake_llm.default = good_reply
    LLMExtractor("fake/x", store=store).extract(chat(5))
    calls = len(fake_llm.requests)
    again = LLMExtractor("fake/x", store=store)
    assert all(r is not None for r in again.extract(chat(5)))
    assert again.calls == 0 and len(fake_llm.requests) == calls
    LLMExtractor("fake/other", store=store).extract(chat(5))
    assert len(fake_llm.requests) > calls


def test_cli_ingest_reports_pending_and_extract_pending_completes_them(fake_llm, cli, tmp_path, db_path, stub_models):
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m.to_json()) + b"\n" for m in chat(12, poison={5})))
    fake_llm.default = good_reply
    result = cli("--db", str(db_path), "ingest", str(path), "--extractor", "llm", "--extract-model", "fake/x",
                 "--json")
    assert result.exit_code == 3, result.stderr
    report = orjson.loads(result.stdout)
    assert report["pending"] == ["c/5"] and report["turns_added"] == 12
    assert report["cues"] == 2 * 11  # per extracted turn: the LLM's triple and one statement cue

    result = cli("--db", str(db_path), "inspect-graph", "--format", "json")
    assert orjson.loads(result.stdout)["conversations"][0]["pending_turns"] == 1
    table = [line.split("\t") for line in cli("--db", str(db_path), "inspect-graph").stdout.splitlines()]
    assert table[0][-2] == "pending" and table[1][-2] == "1"  # the column appears when it matters

    fake_llm.default = lambda messages: good_reply(
        [{"role": "user", "content": messages[-1]["content"].replace("POISON", "cured")}])
    result = cli("--db", str(db_path), "extract", "--pending", "--json")
    assert result.exit_code == 0, result.stderr
    done = orjson.loads(result.stdout)
    assert done["completed"] == 1 and done["still_pending"] == [] and done["model"] == "fake/x"
    detail = orjson.loads(cli("--db", str(db_path), "inspect-graph", "--turn", "5", "--format", "json").stdout)
    assert sorted(c["kind"] for c in detail["cues"]) == ["statement", "triple"]
    assert any(n["kind"] == "semantic" and n["direction"] == "out" for n in detail["neighbours"])
    summary = orjson.loads(cli("--db", str(db_path), "inspect-graph", "--format", "json").stdout)
    assert summary["conversations"][0]["pending_turns"] == 0


def test_an_echo_of_the_reply_format_is_not_a_cue(fake_llm, store):
    """The v1 prompt showed a placeholder triple; Qwen2.5-1.5B copied it for 86 of 86 LoCoMo turns, and
    each copy was stored as a cue. A placeholder now counts as a failed turn, asked again, then pending."""
    out = parse_reply('{"turns": [{"id": "T1", "cues": [["Subject", "relation", "object "]]}]}', {"T1"})
    assert out == {}
    fake_llm.script = ['{"turns": [{"id": "T1", "cues": [["subject", "relation", "object"]]}]}']
    fake_llm.default = good_reply
    results = LLMExtractor("fake/x", store=store, retries=1).extract(chat(1))
    assert [(c.subject, c.relation, c.object) for c in results[0]] == [("Bob", "said", "Turn")]


@pytest.mark.parametrize("reply", ["", "[]", '{"turns": "nope"}'])
def test_empty_or_wrong_shaped_replies_leave_turns_pending(fake_llm, store, reply):
    fake_llm.default = reply
    results = LLMExtractor("fake/x", store=store, retries=1).extract(chat(2))
    assert results == [None, None]


def test_failed_extraction_calls_are_shown_in_the_ingest_report(fake_llm, cli, tmp_path, db_path, stub_models):
    """The model's errors were collected and never shown: a user saw only 'pending', not why."""
    import litellm

    path = tmp_path / "chat.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m.to_json()) + b"\n" for m in chat(3)))
    fake_llm.default = litellm.AuthenticationError("invalid api key sk-test", llm_provider="fake", model="x")
    args = ("--db", str(db_path), "ingest", str(path), "--extractor", "llm", "--extract-model", "fake/x")
    result = cli(*args, "--json")
    assert result.exit_code == 3, result.stderr
    report = orjson.loads(result.stdout)
    assert len(report["pending"]) == 3 and report["extraction_failures"]
    assert all("invalid api key" in failure for failure in report["extraction_failures"])

    text = cli("--db", str(tmp_path / "text.db"), *args[2:])  # a new database: the text report
    assert text.exit_code == 3
    assert f"{len(report['extraction_failures'])} extraction calls failed" in text.stderr
    assert "invalid api key" in text.stderr
