"""Fuzzing the input readers: any bytes give records or a `FILE:LINE: …` error — never a traceback."""

from __future__ import annotations

import re
import subprocess

import orjson
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from conftest import CUEMEM, child_env
from cuemem_cli.errors import CuememError, InputError
from cuemem_cli.manage.export import parse_cues
from cuemem_cli.input.jsonl import parse_line, read_messages, validate
from cuemem_cli.input.sources import Input
from cuemem_cli.records import Message

NAME = "in.jsonl"
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
FIELDS = ["text", "content", "message", "utterance", "time", "timestamp", "date", "datetime", "created_at", "speaker",
          "name", "author", "sender", "conversation", "conversation_id", "conv", "session", "session_id", "role", "id",
          "turn_id", "dia_id", "message_id", "cues", "has_answer"]
TIMES = ["2023-05-08T13:56:00", "1:56 pm on 8 May, 2023", "2023/05/30 (Tue) 23:40", "May 8, 2023", "05/08/2023",
         "1683553560", "2023-05-08T13:56:12+02:00", "yesterday", "", "9999-99-99", "0", "-1e308"]

scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30) | st.sampled_from(TIMES))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
records = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), values, max_size=8)
plausible = st.fixed_dictionaries(
    {"conversation": st.sampled_from(["a", "b"]), "text": st.text(min_size=1, max_size=40)},
    optional={"time": st.sampled_from(TIMES), "speaker": st.text(max_size=8) | st.integers(-99, 99),
              "id": st.text(max_size=6) | st.integers(0, 99), "session": st.text(max_size=4)})


def dumped(record) -> bytes:
    return orjson.dumps(record)


lines = (st.binary(max_size=120)
         | st.text(max_size=120).map(lambda s: s.encode("utf-8", "surrogatepass"))
         | records.map(dumped)
         | plausible.map(dumped)
         | st.tuples(plausible.map(dumped), st.integers(0, 60)).map(lambda t: t[0][: t[1]])
         | st.integers(500, 3000).map(lambda n: b"[" * n)
         | st.sampled_from([b"", b"   ", b"\t\r", b"null", b"[]", b"{}", b'"text"', b"1e999",
                            b'{"text": "hi", "conversation": 123456789012345678901234567890}',
                            b'{"text": "\xff\xfe", "conversation": "x"}', b'{"text": "a\\ud800", "conversation": "x"}',
                            b'{"text": "x", "conversation": "x", "time": {"nested": [1, 2]}}',
                            b'{"text": "x", "conversation": "x", "time": 1e300}',
                            b'{"text": "x", "conversation": "x", "time": -99999999999999999}']))


def check_message(message: Message) -> None:
    assert isinstance(message, Message) and message.text.strip() and message.conversation
    assert message.time is None or ISO.fullmatch(message.time)
    again = parse_line(orjson.dumps(message.to_json()), NAME, message.line, None)
    assert again == message, "what ingest reads, convert/export writes back identically"


@settings(max_examples=400, deadline=None)
@given(raw=lines, line=st.integers(1, 10**6), conversation=st.none() | st.text(min_size=1, max_size=8))
@example(raw=b'{"text": "x", "time": "2023-13-45"}', line=7, conversation="c")
def test_parse_line_gives_a_message_or_a_located_error(raw, line, conversation):
    try:
        message = parse_line(raw, NAME, line, conversation)
    except InputError as exc:
        assert exc.message.startswith(f"{NAME}:{line}: ") and exc.path == NAME and exc.line == line
        return
    event("blank" if message is None else "message")
    if message is None:
        assert not raw.strip()
    else:
        assert message.line == line
        check_message(message)


@settings(max_examples=150, deadline=None)
@given(raw=st.text(max_size=80), line=st.integers(1, 99))
def test_parse_line_accepts_str_too(raw, line):
    try:
        parse_line(raw, NAME, line, "c")
    except InputError as exc:
        assert exc.message.startswith(f"{NAME}:{line}: ")


@settings(max_examples=100, deadline=None)
@given(chunks=st.lists(lines, max_size=10), skip=st.booleans())
def test_read_messages_and_validate(chunks, skip):
    import io

    data = b"\n".join(chunks)
    physical = data.count(b"\n") + 1 if data else 0
    located = re.compile(re.escape(NAME) + r":(\d+): ")
    invalid: list[str] = []
    try:
        got = list(read_messages(Input.of_spool(io.BytesIO(data), NAME), "c", invalid, skip_invalid=skip))
    except InputError as exc:
        assert not skip
        assert 1 <= int(located.match(exc.message).group(1)) <= physical
        return
    for message in got:
        assert 1 <= message.line <= physical
        check_message(message)
    for error in invalid:
        assert 1 <= int(located.match(error).group(1)) <= physical
    assert len(got) + len(invalid) <= physical
    assert [m.line for m in got] == sorted(m.line for m in got)
    try:
        checked = validate(Input.of_spool(io.BytesIO(data), NAME), "c", skip)
    except CuememError as exc:  # an input without a single message is refused, even with --skip-invalid
        assert not got and exc.message.startswith(f"{NAME}: ")
        return
    assert checked.lines == len(got) and checked.invalid == invalid


@settings(max_examples=200, deadline=None)
@given(value=values, line=st.integers(1, 99))
def test_export_cues_field_gives_cues_or_a_located_error(value, line):
    try:
        cues = parse_cues(value, NAME, line)
    except InputError as exc:
        assert exc.message.startswith(f"{NAME}:{line}: ")
        return
    assert cues is None or all(isinstance(c.subject, str) and isinstance(c.kind, str) for c in cues)


files = st.lists(lines, max_size=6).map(b"\n".join) | st.binary(max_size=400)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=files, skip=st.booleans(), stdin=st.booleans(), command=st.sampled_from(["ingest", "import"]))
def test_cli_on_random_files_exits_cleanly(data, skip, stdin, command, runner, tmp_path, monkeypatch, embedder,
                                            spacy_extractor):
    from cuemem_cli.cli.app import app

    # Valid lines get ingested for real; only the model loading is shared between examples.
    monkeypatch.setattr("cuemem_cli.memory.make_extractor", lambda *a, **k: spacy_extractor)
    monkeypatch.setattr("cuemem_cli.models.embedders.get_embedder", lambda *a, **k: embedder)
    path = tmp_path / "random.jsonl"
    path.write_bytes(data)
    args = ["--db", str(tmp_path / "fuzz.db"), command, "-" if stdin else str(path)]
    if skip and command == "ingest":
        args.append("--skip-invalid")
    result = runner.invoke(app, args, input=data if stdin else None)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 3), (result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    event(f"{command} exit {result.exit_code}")
    if result.exit_code == 1:
        assert "error:" in result.stderr


@pytest.mark.subprocess
def test_the_real_process_on_garbage(tmp_path):
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b'{"conversation": "x", "text": "fine"}\n' + bytes(range(256)) * 8 + b"\n"
                     + b'{"text": "\xff\xfe\x00", "conversation": "x"}\n')
    for args in (["ingest", str(path)], ["import", str(path)]):
        proc = subprocess.run([*CUEMEM, "--db", str(tmp_path / "x.db"), *args],
                              capture_output=True, env=child_env(), cwd=tmp_path, timeout=120)
        stderr = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 1, stderr
        assert "Traceback" not in stderr and f"{path}:" in stderr
