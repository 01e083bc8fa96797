"""`local/qwen2.5-1.5b`: assembling the weights from their parts, the litellm glue, and the real model.

The real-model tests need the extra `cuemem[local]` (CI installs it through `cuemem[test]`) and are
skipped with the reason when it is missing; everything else runs on small fake parts.
"""

from __future__ import annotations

import hashlib
import os
import stat

import pytest

from cuemem_cli.models import local_llm
from cuemem_cli.errors import CuememError
from cuemem_cli.records import Message

LOCAL = "local/qwen2.5-1.5b"


def fake_parts(tmp_path, pieces: list[bytes]):
    paths = []
    for i, piece in enumerate(pieces, start=1):
        path = tmp_path / "parts" / f"part{i:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(piece)
        paths.append(path)
    whole = b"".join(pieces)
    return paths, len(whole), hashlib.sha256(whole).hexdigest()


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_assemble_concatenates_in_order_into_a_private_file(tmp_path, monkeypatch):
    monkeypatch.setattr(local_llm, "_CHUNK", 7)  # several reads per part, and reads that cross part ends
    pieces = [os.urandom(50), os.urandom(13), b"", os.urandom(1)]
    parts, size, digest = fake_parts(tmp_path, pieces)
    target = tmp_path / "cache" / "models" / "m.gguf"
    assert local_llm.assemble(parts, target, size, digest) == target
    assert target.read_bytes() == b"".join(pieces)
    assert mode(target) == 0o600 and mode(target.parent) == 0o700 and mode(target.parent.parent) == 0o700
    assert sorted(p.name for p in target.parent.iterdir()) == ["m.gguf", "m.gguf.sha256"]
    assert local_llm._verified(target, size, digest)


def test_assemble_refuses_wrong_bytes_and_leaves_nothing(tmp_path):
    parts, size, digest = fake_parts(tmp_path, [b"abc", b"def"])
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(CuememError, match="sha256") as info:
        local_llm.assemble(parts, target, size, "0" * 64)
    assert "pip install --force-reinstall 'cuemem[local]'" in info.value.hint
    with pytest.raises(CuememError, match="bytes"):
        local_llm.assemble(parts, target, size + 1, digest)
    assert list(target.parent.iterdir()) == []


def test_a_changed_file_is_hashed_again_and_rejected(tmp_path):
    parts, size, digest = fake_parts(tmp_path, [b"abc", b"def"])
    target = local_llm.assemble(parts, tmp_path / "models" / "m.gguf", size, digest)
    target.write_bytes(b"abcdeX")  # same size, new mtime: the stamp no longer matches
    assert not local_llm._verified(target, size, digest)
    target.write_bytes(b"abcdef")
    assert local_llm._verified(target, size, digest)  # the right bytes pass the full check and are stamped again


def test_missing_parts_name_the_extra():
    missing = local_llm.LocalModel("m", "m.gguf", ("cuemem_no_such_part1", "cuemem_no_such_part2"), 1, "0" * 64)
    with pytest.raises(CuememError) as info:
        local_llm.part_paths(missing)
    assert "local/m is not installed" in info.value.message and "cuemem-no-such-part1" in info.value.message
    assert info.value.hint == "install the extra: pip install 'cuemem[local]'"


def test_unknown_local_model_is_a_clear_error():
    from cuemem_cli.models.llm import complete

    with pytest.raises(CuememError, match="no local model named 'gpt-5'") as info:
        complete("local/gpt-5", [{"role": "user", "content": "hi"}])
    assert "local/qwen2.5-1.5b" in info.value.hint


def test_request_carries_sampling_options_with_a_default_length():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "q", "name": "x"}]
    request = local_llm.request_from(messages, {"temperature": 0.0})
    assert request == {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
                       "max_tokens": local_llm.DEFAULT_MAX_TOKENS, "temperature": 0.0}
    assert local_llm.request_from(messages, {"max_tokens": 32, "stop": ["\n"]})["max_tokens"] == 32


def test_stream_chunks_end_with_finish_reason_and_usage():
    chunks = [
        {"choices": [{"delta": {"role": "assistant", "content": None}, "finish_reason": None}]},
        {"choices": [{"delta": {"content": "Den"}, "finish_reason": None}]},
        {"choices": [{"delta": {"content": "ver"}, "finish_reason": None}]},
        {"choices": [{"delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}},
    ]
    out = list(local_llm.stream_chunks(iter(chunks)))
    assert [c["text"] for c in out] == ["Den", "ver", ""]
    assert [c["is_finished"] for c in out] == [False, False, True]
    assert out[-1]["finish_reason"] == "stop"
    assert out[-1]["usage"] == {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def test_runtime_errors_are_raised_with_a_budget_hint():
    with pytest.raises(RuntimeError, match="smaller budget"):
        local_llm._raise_for_error({"error": {"code": 400,
                                               "message": "the request exceeds the available context size"}})
    local_llm._raise_for_error({"choices": []})


# ---------------------------------------------------------------- the real model
_MISSING = local_llm.available()
needs_model = pytest.mark.skipif(_MISSING is not None, reason=f"local model unavailable: {_MISSING}")

TURNS = [
    Message("maya", "I finally moved to Denver last week, the apartment is near Cheesman Park.", source_id="1",
            speaker="Maya", time="2023-08-20T10:00:00"),
    Message("maya", "Nice! Did you take Biscuit, your beagle, with you?", source_id="2",
            speaker="Leo", time="2023-08-20T10:01:00"),
]


@pytest.mark.local_llm
@needs_model
def test_local_model_extracts_cues_and_answers(tmp_path):
    from cuemem_cli import Memory
    from cuemem_cli.cues.llm import LLMExtractor

    with Memory(tmp_path / "local.db", extractor="llm", extract_model=LOCAL) as memory:
        extractor = LLMExtractor(LOCAL, store=memory.store)
        results = extractor.extract(TURNS)
        assert extractor.calls >= 1 and all(r is not None for r in results), extractor.failures
        cues = [c for r in results for c in r]
        assert any("Denver" in f"{c.subject} {c.relation} {c.object}" for c in cues), cues  # a real cue, not an echo

        report = memory.add(TURNS)  # the extractor's cache in this store answers: no second model call
        assert report.turns_added == 2 and not report.pending

        tokens: list[str] = []
        result = memory.ask("Which city does Maya live in now?", conversation="maya", as_of="2023-09-01",
                            model=LOCAL, on_token=tokens.append)
    assert result.answer.kind == "llm" and result.answer.model == LOCAL
    assert "denver" in result.answer.text.lower()
    assert "".join(tokens).strip() == result.answer.text
    assert "1" in [e.source_id for e in result.context.evidence]


@pytest.mark.local_llm
@needs_model
def test_local_model_respects_max_tokens_without_streaming():
    from cuemem_cli.models.llm import complete

    messages = [{"role": "user", "content": "Count from one to fifty in words, separated by commas."}]
    result = complete(LOCAL, messages, max_tokens=5)
    assert result.usage["completion_tokens"] <= 5 and result.text
    assert result.usage["prompt_tokens"] > 0
