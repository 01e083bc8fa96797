"""Errors in the library's words, each interface adding its own (issue 47): library code says what went
wrong and what to do without naming a command-line flag or command; an error's `fields` say what its hint
is about, and the CLI names them as flags (cli/output.py FLAGS), the MCP server as its tools' arguments
(tests/test_mcp.py) and browse as its form. A program using `Memory` reads the library's words alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import orjson
import pytest

import cuemem_cli
from cuemem_cli.errors import CuememError

PACKAGE = Path(cuemem_cli.__file__).parent
INTERFACES = ("cli", "browse", "mcp_server.py")  # they name their own flags, tool arguments and forms
# A flag, or a cuemem command; `pip install --force-reinstall` is pip's, "not a cuemem export" is a noun
FLAG_OR_COMMAND = re.compile(r"(?<![\w-])--(?!force-reinstall)[a-z][a-z-]*"
                             r"|(?<!a )\bcuemem (?:ingest|ask|export|import|forget|convert|inspect-graph|extract|eval"
                             r"|mcp|browse)\b")
LINES = [{"conversation": "c-9f1", "title": "Lisbon trip", "speaker": "Ana", "time": "2024-05-03T10:00:00",
          "text": "We are staying at a guesthouse in Alfama for the Lisbon trip."},
         {"conversation": "c-2b7", "title": "Lisbon trip", "speaker": "Ana", "time": "2023-11-20T09:00:00",
          "text": "Plan a weekend in Lisbon for my parents in December."}]


def library_modules() -> list[tuple[Path, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] not in INTERFACES:
            found.append((path, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _docstrings(tree: ast.Module) -> set[int]:
    owners = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                                          ast.AsyncFunctionDef))]
    return {id(n.body[0].value) for n in owners
            if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def test_no_library_message_names_a_flag_or_a_command():
    """Every string the library could show (docstrings aside: they may say which command uses a function)."""
    found = []
    for path, tree in library_modules():
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {m.group()!r} in {node.value[:80]!r}"
                          for m in FLAG_OR_COMMAND.finditer(node.value)]
    assert found == []


def named_fields() -> dict[str, str]:
    """Every field a library error names in its `fields=` (field → where)."""
    found = {}
    for path, tree in library_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "fields":
                for constant in ast.walk(node.value):
                    if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                        found[constant.value] = f"{path.relative_to(PACKAGE)}:{constant.lineno}"
    return found


def test_every_field_the_library_names_has_a_flag_and_the_other_interfaces_name_known_fields():
    pytest.importorskip("starlette")
    from cuemem_cli.browse.app import FORM
    from cuemem_cli.cli.output import FLAGS
    from cuemem_cli.mcp_server import PARAMETERS

    named = named_fields()
    assert {"add", "conversation", "window", "db", "skip_invalid"} <= set(named), "the scan finds them"
    assert {field: where for field, where in named.items() if field not in FLAGS} == {}
    others = set(FORM) | {field for names in PARAMETERS.values() for field in names}
    assert others <= set(FLAGS), "a field no library error names (a typo?)"


def test_a_hint_gets_the_interfaces_words_for_its_fields():
    error = CuememError("this graph was built with window=2, sem_k=5", "ask with a window of at most 2",
                        fields=("window", "sem_k", "window"))
    flags = {"window": "--window", "sem_k": "--sem-k"}
    assert error.hint_in(flags) == "ask with a window of at most 2: --window, --sem-k", "each named once, in order"
    assert error.hint_in({"budget": "the budget argument"}) == "ask with a window of at most 2", \
        "a field the interface lacks adds nothing"
    assert CuememError("x", None, fields=("window",)).hint_in({"window": "--window"}) == "--window"
    assert str(error) == "this graph was built with window=2, sem_k=5\nask with a window of at most 2", \
        "a program reads the library's words"


# ------------------------------------------------------------------ the CLI adds its flags
@pytest.fixture
def lisbon(cli, tmp_path, stub_models) -> str:
    """Two chats titled alike, in a graph of window 2 and sem_k 5 (stand-in models)."""
    source = tmp_path / "chats.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in LINES))
    db = str(tmp_path / "chats.db")
    assert cli("--db", db, "ingest", str(source)).exit_code == 0
    return db


def hints(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("hint:")]


def test_the_cli_names_its_flags_in_the_librarys_hints(cli, lisbon, tmp_path):
    wide = cli("--db", lisbon, "ask", "Where?", "--window", "3")
    assert (wide.exit_code, hints(wide)) == (1, ["hint: ask with a window of at most 2 and a sem_k of at most 5: "
                                                 "--window, --sem-k"])
    ambiguous = cli("--db", lisbon, "ask", "Where?", "-c", "Lisbon trip")
    assert hints(ambiguous) == ["hint: name the one you mean by its name: --conversation NAME"]
    unselected = cli("--db", lisbon, "forget", "--yes")
    assert hints(unselected) == ["hint: say what to forget: a conversation, a session, turns, a time before which, "
                                 "an age or a number of turns to keep: --conversation NAME, --session, --turn, "
                                 "--before TIME, --decay DAYS, --lru N"]
    missing = cli("--db", str(tmp_path / "none.db"), "ask", "Where?")
    assert hints(missing) == ["hint: add a dialogue first: cuemem ingest FILE"]
    folder = cli("--db", str(tmp_path), "ask", "Where?")
    assert hints(folder) == [f"hint: name a file, e.g. {tmp_path / 'memory.db'}: --db PATH (or $CUEMEM_DB)"]


def test_the_python_api_says_the_same_in_the_librarys_words(lisbon):
    from cuemem_cli import Memory, Settings

    with Memory(lisbon) as memory, pytest.raises(CuememError) as caught:
        memory.context("Where?", settings=Settings(window=3))
    assert caught.value.hint == "ask with a window of at most 2 and a sem_k of at most 5"
    assert caught.value.fields == ("window", "sem_k")


# ------------------------------------------------------------------ browse adds its form
def test_browse_names_its_form_in_the_librarys_hints(lisbon):
    """The page's question box narrows by a menu: an ambiguous title (a link, an edited address) names it."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from cuemem_cli import Memory
    from cuemem_cli.browse.app import create_app

    with Memory(lisbon, create=False) as memory:
        client = TestClient(create_app(memory, None, "token", 8123, lisbon), base_url="http://127.0.0.1:8123")
        answer = client.get("/token/api/context", params={"q": "Where?", "c": "Lisbon trip"})
        page = client.get("/token/ask", params={"q": "Where?", "c": "Lisbon trip"})
    assert answer.status_code == 400
    assert answer.json()["hint"] == "name the one you mean by its name: the conversation menu beside the question"
    assert "name the one you mean by its name: the conversation menu beside the question" in page.text
    assert "--conversation" not in answer.text + page.text
