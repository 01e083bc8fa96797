"""Errors that help: a failed model still shows the evidence, a missing key fails at once, a closed pipe
ends quietly, messages to a file stay one line; plus `--version`."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess

import orjson
import pytest

from conftest import CUEMEM, SAMPLES, child_env, copy_memory

MAYA = SAMPLES / "maya_and_leo.jsonl"
QUESTION = "What breed is the dog Maya adopted?"


@pytest.fixture(scope="module")
def maya_db(maya_memory, tmp_path_factory):
    """Maya & Leo as `cuemem ingest` stores it (conftest.maya_memory)."""
    return copy_memory(maya_memory, tmp_path_factory.mktemp("maya-errors"))


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in child_env().items() if k not in ("COLUMNS", "TERMINAL_WIDTH", "OPENAI_API_KEY")}
    return {**env, **extra}


# ------------------------------------------------------------------ model failures
def test_missing_api_key_fails_at_once_naming_the_variable(cli, maya_db, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = cli("--db", str(maya_db), "ask", QUESTION, "--model", "openai/gpt-4o-mini", "--json")
    assert result.exit_code == 1
    data = orjson.loads(result.stdout)
    assert data["answer"] is None and "OPENAI_API_KEY" in data["error"] and "not set" in data["error"]
    assert "s2:9" in {e["source_id"] for e in data["evidence"]}, "the evidence is still given"
    assert "OPENAI_API_KEY" in result.stderr and "network" not in result.stderr

    text = cli("--db", str(maya_db), "ask", QUESTION, "--model", "openai/gpt-4o-mini")
    assert text.exit_code == 1 and "Evidence" in text.stdout and "beagle" in text.stdout
    assert "error: model openai/gpt-4o-mini needs OPENAI_API_KEY" in text.stderr


def test_a_failing_model_still_prints_the_evidence(cli, maya_db, fake_llm):
    import litellm

    fake_llm.script = [litellm.BadRequestError("the model refused", model="x", llm_provider="fake")] * 2
    data_run = cli("--db", str(maya_db), "ask", QUESTION, "--model", "fake/refuser", "--json")
    assert data_run.exit_code == 1
    data = orjson.loads(data_run.stdout)
    assert data["answer"] is None and "the model refused" in data["error"] and data["evidence"]
    assert "the model refused" in data_run.stderr
    text = cli("--db", str(maya_db), "ask", QUESTION, "--model", "fake/refuser")
    assert text.exit_code == 1 and "Evidence" in text.stdout and "the model refused" in text.stderr
    assert len(fake_llm.requests) == 2, "a bad request is not retried"


def streaming_model(monkeypatch, calls: list[int]):
    """`stream/…`: the first call sends two tokens then breaks; later calls stream the whole answer."""
    import litellm
    from litellm.utils import custom_llm_setup

    def chunk(text: str, done: bool = False) -> dict:
        return {"text": text, "is_finished": done, "finish_reason": "stop" if done else "", "usage": None,
                "index": 0}

    class Streamer(litellm.CustomLLM):
        def streaming(self, *args, **kwargs):
            calls.append(1)
            first = len(calls) == 1

            def chunks():
                yield chunk("ZEBRA-one ")
                yield chunk("two \x1b[2J")
                if first:
                    raise litellm.ServiceUnavailableError("connection dropped", llm_provider="stream", model="m")
                yield chunk("three", done=True)

            return chunks()

    monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "stream", "custom_handler": Streamer()}])
    custom_llm_setup()


def test_a_stream_broken_after_its_first_tokens_is_not_printed_twice(cli, maya_db, monkeypatch):
    import typer.testing

    calls: list[int] = []
    streaming_model(monkeypatch, calls)
    # ask streams only to a terminal: make the runner's stdout claim to be one
    monkeypatch.setattr(typer.testing._NamedTextIOWrapper, "isatty", lambda self: True, raising=False)
    result = cli("--db", str(maya_db), "ask", QUESTION, "--model", "stream/m")
    assert result.stdout.count("ZEBRA-one") == 1 and calls == [1], result.stderr
    assert r"two \x1b[2J" in result.stdout and "\x1b[2J" not in result.stdout  # tokens are untrusted too
    assert result.exit_code == 1 and "cut short" in result.stderr and "Evidence" in result.stdout

    from cuemem_cli.models.llm import complete

    tokens: list[str] = []  # a stream that breaks before its first token is retried as before
    calls.clear()
    calls.append(0)  # the next call is the second: it streams the whole answer
    done = complete("stream/m", [{"role": "user", "content": "q"}], on_token=tokens.append)
    assert done.text == "ZEBRA-one two \x1b[2Jthree" == "".join(tokens)


# ------------------------------------------------------------------ plain errors
def test_db_pointing_at_a_directory_is_explained(cli, tmp_path):
    for command in (["ask", "q"], ["ingest", str(MAYA)], ["inspect-graph"]):
        result = cli("--db", str(tmp_path), *command)
        assert result.exit_code == 1, command
        assert f"{tmp_path} is a directory" in result.stderr and "Traceback" not in result.output


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0 and re.fullmatch(r"cuemem \d+\.\d+\.\d+\S*\n", result.stdout)


# ------------------------------------------------------------------ pipes and files
F_SETPIPE_SZ = 1031  # Linux: shrink the pipe so a few KB of output fill it


def run_into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess:
    """Run cuemem into a one-page pipe, read one line, close the pipe: like `cuemem … | head -1`."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([*CUEMEM, *args], stdout=write_end,
                            stderr=subprocess.PIPE, env=subprocess_env())
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        first = reader.readline()
    stderr = proc.communicate(timeout=120)[1]
    return subprocess.CompletedProcess(args, proc.returncode, first, stderr)


@pytest.mark.subprocess
@pytest.mark.parametrize("command", [
    ["ask", QUESTION, "--context-only", "--budget", "4000"],
    ["inspect-graph", "--format", "dot"],
    ["export"],
])
def test_a_reader_that_stops_early_ends_the_command_quietly(maya_db, command):
    done = run_into_closed_pipe(["--db", str(maya_db), *command])
    assert done.stdout, "the reader got its first line"
    assert (done.returncode, done.stderr) == (0, b"")


@pytest.mark.subprocess
def test_convert_into_a_closed_pipe(tmp_path):
    messages = [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " + "x" * 200}
                for i in range(200)]
    source = tmp_path / "chat.json"
    source.write_bytes(orjson.dumps(messages))
    done = run_into_closed_pipe(["convert", "openai", str(source)])
    assert done.stdout.startswith(b"{") and (done.returncode, done.stderr) == (0, b"")


@pytest.mark.subprocess
def test_messages_to_a_file_are_not_wrapped(tmp_path):
    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / "memory.db"
    deep.parent.mkdir()
    ingest = subprocess.run([*CUEMEM, "--db", str(deep), "ingest", str(MAYA)],
                            capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert ingest.returncode == 0, ingest.stderr
    [report] = [line for line in ingest.stderr.splitlines() if line.startswith("ingested")]
    assert len(report) > 80 and report.endswith(" s"), "the whole report on one line"
    missing = deep.parent / "nothing-here.db"
    ask = subprocess.run([*CUEMEM, "--db", str(missing), "ask", "q"],
                         capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert ask.returncode == 1 and f"error: no cuemem database at {missing}" in ask.stderr.splitlines()[0]


def test_key_check_refuses_only_providers_that_need_nothing_but_a_key(monkeypatch):
    from cuemem_cli.errors import LLMError
    from cuemem_cli.models.llm import _check_key, litellm

    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AWS_ACCESS_KEY_ID"):
        monkeypatch.delenv(name, raising=False)
    lib = litellm()
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        _check_key(lib, "anthropic/claude-3-haiku", {})
    with pytest.raises(LLMError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        _check_key(lib, "gemini/gemini-pro", {})
    monkeypatch.setenv("GEMINI_API_KEY", "x")  # either of the two will do
    _check_key(lib, "gemini/gemini-pro", {})
    _check_key(lib, "bedrock/anthropic.claude-v2", {})  # AWS profiles and roles need no key variable
    _check_key(lib, "ollama/llama3", {})  # a local server: no key at all
    _check_key(lib, "anthropic/claude-3-haiku", {"api_key": "sk-given"})


@pytest.fixture
def many_chats(cli, tmp_path, stub_models):
    """Twenty-five chats, three of them titled about Lisbon and Porto, the rest 'New chat' (as an export has)."""
    titles = ["Lisbon trip", "Lisbon flat hunt", "Porto weekend"] + ["New chat"] * 22
    lines = [orjson.dumps({"conversation": f"c-{i:02d}", "title": title, "id": "1", "speaker": "Ana",
                           "time": "2024-05-03T10:00:00", "text": f"Notes on {title}, number {i}."}).decode()
             for i, title in enumerate(titles)]
    source = tmp_path / "chats.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = tmp_path / "chats.db"
    assert cli("--db", str(db), "ingest", str(source)).exit_code == 0
    return db


def test_a_conversation_is_named_by_the_unique_start_of_its_title(cli, many_chats):
    """`-c "Lisbon"` for the only chat titled "Lisbon trip" was refused, its hint listing every chat."""
    def narrowed(*names: str):
        args = [arg for name in names for arg in ("-c", name)]
        result = cli("--db", str(many_chats), "ask", "Where?", *args, "--context-only", "--json")
        if result.exit_code:
            return result.exit_code, result.stderr
        return result.exit_code, orjson.loads(result.stdout)["conversations"]

    assert narrowed("lisbon T") == (0, ["c-00"])
    assert narrowed("  PORTO") == (0, ["c-02"])
    code, said = narrowed("Lisbon")
    assert code == 1
    assert said.splitlines() == ["error: the start 'Lisbon' names 2 conversations: c-00 (Lisbon trip), "
                                 "c-01 (Lisbon flat hunt)",
                                 "hint: name the one you mean by its name, or more of its title: --conversation NAME"]
    code, said = narrowed("c-0")
    assert code == 1 and "names 10 conversations:" in said and said.count("(New chat)") <= 5 and "… (10 in all)" in said
    code, said = narrowed("Lisbn trip")
    assert code == 1 and "no conversation named 'Lisbn trip'" in said
    hint = said.splitlines()[1]
    assert hint.startswith("hint: the closest of the 25 there are: c-00 (Lisbon trip), c-01 (Lisbon flat hunt)")
    assert hint.count("(") == 5  # the few closest, not all 25


def test_a_title_start_works_wherever_a_conversation_is_named(cli, many_chats):
    result = cli("--db", str(many_chats), "inspect-graph", "-c", "porto w", "--json")
    assert result.exit_code == 0, result.stderr
    assert [c["conversation"] for c in orjson.loads(result.stdout)["conversations"]] == ["c-02"]


def test_forget_wants_the_whole_name_or_title(cli, many_chats):
    """Deleting is not reading: a start of a title that names one chat is not enough to forget it."""
    result = cli("--db", str(many_chats), "forget", "--conversation", "porto", "--json")
    assert result.exit_code == 1 and "no conversation named 'porto'" in result.stderr
    listed = cli("--db", str(many_chats), "inspect-graph", "--json")
    assert "c-02" in [c["conversation"] for c in orjson.loads(listed.stdout)["conversations"]]
