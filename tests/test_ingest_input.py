"""No silent drops on input: every bad line reported, unique conversations per source, --conversation overrides."""

from __future__ import annotations

import json

import orjson
import pytest

from conftest import REPO, raw

pytestmark = pytest.mark.usefixtures("stub_models")  # about the lines read, not their cues or vectors


def stored(db_path) -> list[tuple[str, str, str]]:
    """(conversation, source id, text) of every stored turn, in conversation then position order."""
    conn = raw(db_path)
    rows = conn.execute("SELECT c.name, t.source_id, t.text FROM turns t "
                        "JOIN conversations c ON c.id = t.conversation_id ORDER BY c.name, t.position").fetchall()
    conn.close()
    return [tuple(row) for row in rows]


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_two_openai_files_get_their_own_conversations(cli, db_path, tmp_path):
    first, second = tmp_path / "monday.json", tmp_path / "tuesday.json"
    first.write_text(json.dumps({"messages": [{"role": "user", "content": "I adopted a beagle."},
                                              {"role": "assistant", "content": "Congratulations!"}]}))
    second.write_text(json.dumps({"messages": [{"role": "user", "content": "I started learning the cello."}]}))
    for path in (first, second):
        converted = tmp_path / f"{path.stem}.jsonl"
        result = cli("convert", "openai", str(path))
        assert result.exit_code == 0, result.stderr
        converted.write_text(result.stdout)
        assert cli("--db", str(db_path), "ingest", str(converted)).exit_code == 0
    turns = stored(db_path)
    assert len(turns) == 3
    names = sorted({conversation for conversation, _, _ in turns})
    assert names[0].startswith("monday-") and names[1].startswith("tuesday-")
    assert all(len(name.split("-")[-1]) == 8 for name in names)


def test_openai_unnamed_conversation_is_named_by_file_hash(cli, tmp_path):
    one, two = tmp_path / "a" / "chat.json", tmp_path / "b" / "chat.json"
    for path, text in ((one, "hello"), (two, "goodbye")):
        path.parent.mkdir()
        path.write_text(json.dumps([{"role": "user", "content": text}]))
    names = [orjson.loads(cli("convert", "openai", str(p)).stdout)["conversation"] for p in (one, two)]
    assert names[0] != names[1] and all(n.startswith("chat-") for n in names)
    again = orjson.loads(cli("convert", "openai", str(one)).stdout)["conversation"]
    assert again == names[0]  # stable: re-converting the same file names it the same
    piped = orjson.loads(cli("convert", "openai", "-", input=one.read_text()).stdout)["conversation"]
    assert piped == "stdin-" + names[0].split("-")[-1]


def test_conversation_option_overrides_every_line(cli, db_path, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(jsonl({"conversation": "trip", "id": "0", "text": "We booked Lisbon."},
                       {"text": "The flight leaves at nine.", "id": "1"}))
    b.write_text(jsonl({"conversation": "work", "id": "0", "text": "The review is on Friday."}))
    for path in (a, b):
        result = cli("--db", str(db_path), "ingest", str(path), "--conversation", "X", "--json")
        assert result.exit_code == 0, result.stderr
        assert orjson.loads(result.stdout)["turns_existing"] == 0
    assert stored(db_path) == [("X", "trip/0", "We booked Lisbon."), ("X", "1", "The flight leaves at nine."),
                               ("X", "work/0", "The review is on Friday.")]


def test_every_bad_line_is_reported_and_nothing_stored(cli, db_path, tmp_path):
    bad = tmp_path / "chat.jsonl"
    bad.write_text(jsonl({"conversation": "c", "text": "fine"}) + "{oops\n"
                   + jsonl({"conversation": "c", "text": "fine too"}, {"conversation": "c", "text": 42},
                           {"conversation": "c", "text": "ok", "time": "not a time"}))
    result = cli("--db", str(db_path), "ingest", str(bad))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert f"{bad}: 3 invalid lines (nothing stored): {bad}:2: not valid JSON" in message
    assert f"{bad}:4: 'text' must be a string, not a number" in message
    assert f"{bad}:5: cannot read time 'not a time'" in message
    assert not db_path.exists() or stored(db_path) == []


def test_a_turn_over_the_size_limit_is_refused_with_its_line_and_nothing_is_stored(cli, db_path, tmp_path):
    """A 5 MB agent log as one turn would take minutes and gigabytes; it is refused, naming the line and
    the way out, and the lines around it are not stored either (one batch, one decision)."""
    from cuemem_cli.input.jsonl import MAX_TURN_CHARS

    big = tmp_path / "log.jsonl"
    big.write_text(jsonl({"conversation": "c", "text": "before"},
                         {"conversation": "c", "text": "x " * (MAX_TURN_CHARS // 2) + "y"},
                         {"conversation": "c", "text": "x " * (MAX_TURN_CHARS // 2)}))
    result = cli("--db", str(db_path), "ingest", str(big))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert (f"{big}:2: 'text' is {MAX_TURN_CHARS + 1:,} characters long; "
            f"a turn holds at most {MAX_TURN_CHARS:,}") in message
    assert "split it into several messages" in message and f"{big}:3" not in message  # exactly the limit is taken
    assert not db_path.exists() or stored(db_path) == []


def test_many_bad_lines_are_capped_with_a_count(cli, db_path, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(f'{{"conversation": "c", "text": {n}}}\n' for n in range(25)))
    result = cli("--db", str(db_path), "ingest", str(bad))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert "25 invalid lines" in message and "… and 15 more" in message
    assert f"{bad}:10:" in message and f"{bad}:11:" not in message


def test_type_errors_name_the_field(cli, db_path, tmp_path):
    cases = [('{"conversation": "c", "content": ["a", "b"]}', "'content' must be a string, not a list"),
             ('{"conversation": {"a": 1}, "text": "x"}', "'conversation' must be a string or a number, not an object"),
             ('{"conversation": "c", "text": "x", "speaker": true}',
              "'speaker' must be a string or a number, not a boolean"),
             ('{"conversation": "c", "text": "x", "time": [2023]}', "'time' must be a string or a number, not a list")]
    for line, expected in cases:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(line + "\n")
        result = cli("--db", str(db_path), "ingest", str(bad))
        assert result.exit_code == 1
        assert f"{bad}:1: {expected}" in " ".join(result.stderr.split()), result.stderr


def test_byte_order_mark_on_a_file_and_on_stdin(cli, db_path, tmp_path):
    data = jsonl({"conversation": "bom", "text": "I moved to Denver.", "id": "1"})
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + data.encode())
    assert cli("--db", str(db_path), "ingest", str(path)).exit_code == 0
    piped = jsonl({"conversation": "bom", "text": "I like hiking.", "id": "2"})
    assert cli("--db", str(db_path), "ingest", "-", input="\ufeff" + piped).exit_code == 0
    assert [sid for _, sid, _ in stored(db_path)] == ["1", "2"]


# ------------------------------------------------------------------ several files, folders, compressed input
def test_several_files_are_read_in_the_order_given_and_a_name_is_one_conversation(cli, db_path, tmp_path):
    """docs/input-formats.md: files in the order given, each file's lines in order; a conversation name in
    two files is one conversation, continued in that order."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(jsonl({"conversation": "trip", "id": "0", "text": "We booked Lisbon."},
                       {"conversation": "trip", "id": "1", "text": "The flight leaves at nine."}))
    b.write_text(jsonl({"conversation": "work", "id": "0", "text": "The review is on Friday."},
                       {"conversation": "trip", "id": "2", "text": "We changed the plan to Porto."}))
    result = cli("--db", str(db_path), "ingest", str(a), str(b), "--json")
    assert result.exit_code == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert report["lines"] == report["turns_added"] == 4 and report["conversations"] == ["trip", "work"]
    assert stored(db_path) == [("trip", "0", "We booked Lisbon."), ("trip", "1", "The flight leaves at nine."),
                               ("trip", "2", "We changed the plan to Porto."),
                               ("work", "0", "The review is on Friday.")]
    other = tmp_path / "other.db"
    assert cli("--db", str(other), "ingest", str(b), str(a)).exit_code == 0
    assert [sid for conv, sid, _ in stored(other) if conv == "trip"] == ["2", "0", "1"]  # the order given
    named = tmp_path / "named.db"  # cuemem's own format by name, as a user may well try
    assert cli("--db", str(named), "ingest", "--from", "jsonl", str(a), str(b)).exit_code == 0
    assert stored(named) == stored(db_path)


def test_a_bad_line_in_any_file_stores_nothing_and_names_its_file(cli, db_path, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(jsonl({"conversation": "c", "text": "fine"}))
    b.write_text(jsonl({"conversation": "c", "text": "fine too"}, {"conversation": "c", "text": 7}))
    result = cli("--db", str(db_path), "ingest", str(a), str(b))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert f"{a}, {b}: 1 invalid line (nothing stored): {b}:2: 'text' must be a string" in message
    assert not db_path.exists()


def test_a_folder_is_its_jsonl_files_in_path_order(cli, db_path, tmp_path):
    import gzip

    folder = tmp_path / "chats"
    (folder / "2024").mkdir(parents=True)
    (folder / "2024-01.jsonl").write_text(jsonl({"conversation": "c", "id": "jan", "text": "January."}))
    (folder / "2024" / "03.jsonl.gz").write_bytes(gzip.compress(jsonl({"conversation": "c", "id": "mar",
                                                                         "text": "March."}).encode()))
    (folder / "2024-02.jsonl").write_text(jsonl({"conversation": "c", "id": "feb", "text": "February."}))
    (folder / "notes.txt").write_text("not read")
    (folder / ".draft.jsonl").write_text("{not read either")  # hidden
    result = cli("--db", str(db_path), "ingest", str(folder), "--json")
    assert result.exit_code == 0, result.stderr
    assert [sid for _, sid, _ in stored(db_path)] == ["mar", "jan", "feb"]  # name by name: "2024" < "2024-01.jsonl"
    assert orjson.loads(result.stdout)["files_skipped"] == [
        {"file": str(folder / ".draft.jsonl"), "why": "hidden"},
        {"file": str(folder / "notes.txt"), "why": "text, not JSONL"}]
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("--db", str(tmp_path / "e.db"), "ingest", str(empty))
    assert result.exit_code == 1
    assert f"{empty}: no .jsonl files or chat exports in this folder: it is empty" in result.stderr
    assert not (tmp_path / "e.db").exists()


def test_gzip_is_read_by_its_bytes_and_a_zip_by_its_jsonl_members(cli, db_path, tmp_path):
    import gzip
    import zipfile

    lines = jsonl({"conversation": "c", "id": "1", "text": "I adopted a beagle."},
                  {"conversation": "c", "id": "2", "text": "His name is Biscuit."})
    packed = tmp_path / "chat.jsonl"  # gzipped, whatever the name says
    packed.write_bytes(gzip.compress(lines.encode()))
    result = cli("--db", str(db_path), "ingest", str(packed), "--json")
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["turns_added"] == 2
    piped = cli("--db", str(tmp_path / "p.db"), "ingest", "-", input=gzip.compress(lines.encode()))
    assert piped.exit_code == 0, piped.stderr
    assert stored(tmp_path / "p.db") == stored(db_path)
    archive = tmp_path / "chats.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("README.txt", "not read")
        z.writestr("b-later.jsonl", jsonl({"conversation": "c", "id": "4", "text": "He sleeps all day."}))
        z.writestr("b/later.jsonl", jsonl({"conversation": "c", "id": "3", "text": "He ate my sandwich."}))
        z.writestr("a.jsonl", lines)
    zipped = tmp_path / "z.db"
    result = cli("--db", str(zipped), "ingest", str(archive))
    assert result.exit_code == 0, result.stderr
    assert [sid for _, sid, _ in stored(zipped)] == ["1", "2", "3", "4"]  # as a folder's: "b" < "b-later.jsonl"


def test_a_pipe_given_as_a_file_is_read_whole(cli, db_path, tmp_path):
    """`cuemem ingest <(zcat chat.jsonl.gz)`: a named pipe can be read once only, but ingest reads its
    input twice (validate, then store); it is kept aside like standard input, not read short."""
    import os
    import threading

    lines = jsonl(*({"conversation": "c", "id": str(i), "text": f"Message number {i} " + "x" * 200}
                    for i in range(40))).encode()  # more than the first bytes read to tell what a file is
    fifo = tmp_path / "chat.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(lines,))
    writer.start()
    result = cli("--db", str(db_path), "ingest", str(fifo), "--json")
    writer.join(timeout=60)
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["turns_added"] == 40
    assert [sid for _, sid, _ in stored(db_path)] == [str(i) for i in range(40)]


def test_a_zip_holding_no_chat_says_what_it_holds(cli, db_path, tmp_path):
    import zipfile

    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("index.html", "<html>")
        z.writestr("logo.png", b"\x89PNG")
    result = cli("--db", str(db_path), "ingest", str(archive))
    assert result.exit_code == 1
    assert f"{archive}: a zip archive without .jsonl files or chat exports (it holds index.html, logo.png)" \
        in result.stderr
    assert not db_path.exists()
    empty = tmp_path / "export.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("conversations.json", "[]")
    result = cli("--db", str(db_path), "ingest", str(empty))
    assert result.exit_code == 1 and f"{empty}/conversations.json: an empty list: no chats in it" in result.stderr
    assert not db_path.exists()


def _sqlite_file(path):
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    return path.read_bytes()


def _tar_file(path):
    import io
    import tarfile

    data = jsonl({"conversation": "c", "text": "x"}).encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("chat.jsonl")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path.read_bytes()


LINE = jsonl({"conversation": "c", "text": "I moved to Denver."}).encode()


@pytest.mark.parametrize("make, says, hint", [
    (lambda p: __import__("bz2").compress(LINE), "a bzip2-compressed file", "bzip2 -dk"),
    (lambda p: __import__("lzma").compress(LINE), "an xz-compressed file", "xz -dk"),
    (_tar_file, "a tar archive", "tar -xf"),
    (_sqlite_file, "a SQLite database, not input text", "--db"),
    (lambda p: LINE.decode().encode("utf-16"), "UTF-16 text; cuemem reads UTF-8", "iconv -f UTF-16 -t UTF-8"),
    (lambda p: b"%PDF-1.7\n%binary", "a PDF document, not input text", "docs/input-formats.md"),
    (lambda p: bytes(range(256)), "binary data, not UTF-8 text", "docs/input-formats.md"),
    (lambda p: __import__("gzip").compress(LINE * 50)[:40], "cannot be read", "cut short or damaged"),
], ids=["bzip2", "xz", "tar", "sqlite", "utf16", "pdf", "binary", "cut-gzip"])
def test_a_file_that_is_not_text_says_what_it_is_and_what_to_do(cli, db_path, tmp_path, make, says, hint):
    """Never "22 invalid lines" for compressed bytes, nor an empty database with --skip-invalid."""
    path = tmp_path / "chat.jsonl"
    path.write_bytes(make(path))
    for extra in ([], ["--skip-invalid"]):
        result = cli("--db", str(db_path), "ingest", str(path), *extra)
        assert result.exit_code == 1, result.stderr
        message = " ".join(result.stderr.split())
        assert f"error: {path}: {says}" in message and hint in message
        assert "invalid line" not in message and "Traceback" not in result.output
        assert not db_path.exists()


@pytest.mark.parametrize("content", ["", "\n\n  \n", "\ufeff\n"], ids=["empty", "blank-lines", "bom-only"])
def test_an_empty_input_is_refused_and_creates_no_database(cli, db_path, tmp_path, content):
    path = tmp_path / "chat.jsonl"
    path.write_text(content, encoding="utf-8")
    result = cli("--db", str(db_path), "ingest", str(path))
    assert result.exit_code == 1 and result.stdout == ""
    assert f"{path}: no messages: the input is empty or holds only blank lines" in result.stderr
    assert "docs/input-formats.md" in result.stderr
    assert not db_path.exists()
    piped = cli("--db", str(db_path), "ingest", "-", input=content)
    assert piped.exit_code == 1 and "<stdin>: no messages" in piped.stderr and not db_path.exists()


def test_skip_invalid_with_no_valid_line_stores_nothing(cli, db_path, tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(jsonl({"conversation": "c", "text": 1}, {"conversation": "c"}))
    result = cli("--db", str(db_path), "ingest", str(path), "--skip-invalid")
    assert result.exit_code == 1
    assert f"{path}: 2 invalid lines (nothing stored)" in " ".join(result.stderr.split())
    assert not db_path.exists()


@pytest.mark.parametrize("text", ["\u200b\u200b", "\u200c\u200d", "\ufeff", "\u2060 \u200b\n", "\u3164"])
def test_a_turn_of_invisible_characters_is_as_empty_as_no_text(cli, db_path, tmp_path, text):
    path = tmp_path / "chat.jsonl"
    path.write_text(jsonl({"conversation": "c", "text": "I moved to Denver."}, {"conversation": "c", "text": text}))
    result = cli("--db", str(db_path), "ingest", str(path))
    assert result.exit_code == 1
    assert f"{path}:2: 'text' is invisible (zero-width characters only)" in " ".join(result.stderr.split())
    assert not db_path.exists()
    skipped = cli("--db", str(db_path), "ingest", str(path), "--skip-invalid", "--json")
    assert skipped.exit_code == 3 and orjson.loads(skipped.stdout)["turns_added"] == 1
    assert [text for _, _, text in stored(db_path)] == ["I moved to Denver."]


def test_converters_skip_invisible_messages_as_they_skip_empty_ones(cli, tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"id": "x", "messages": [{"role": "user", "content": "\u200b\u200b"},
                                                        {"role": "user", "content": "Hello!"}]}))
    result = cli("convert", "openai", str(path))
    assert result.exit_code == 0, result.stderr
    assert [orjson.loads(line)["id"] for line in result.stdout.splitlines()] == ["1"]


def test_a_cut_off_line_is_said_to_be_cut_off(cli, db_path, tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_bytes(jsonl({"conversation": "c", "text": "fine"}).encode()
                     + '{"conversation": "c", "text": "Ich bin nach Zürich gez\n'.encode())  # ü: 2 bytes, 1 character
    result = cli("--db", str(db_path), "ingest", str(path))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert f"{path}:2: the line is cut off: its JSON object does not end on it" in message
    assert "control character" not in message and "was the file cut short" in message
    assert not db_path.exists()


def test_a_malformed_line_points_at_the_input_formats_page(cli, db_path, tmp_path):
    from conftest import REPO

    path = tmp_path / "chat.jsonl"
    path.write_text("{oops}\n")
    result = cli("--db", str(db_path), "ingest", str(path))
    assert result.exit_code == 1
    assert "hint: each line must be one JSON object with a 'text' (docs/input-formats.md)" in result.stderr
    assert "README" not in result.stderr and (REPO / "docs" / "input-formats.md").exists()


FIXTURES = REPO / "tests" / "fixtures"


def test_a_folder_reads_the_chat_exports_in_it_and_names_every_file_it_skips(cli, db_path, tmp_path):
    """`cuemem ingest mixed/`: an unpacked ChatGPT export and a Claude.ai one beside JSONL files are read
    as what they are, and every other file is named on stderr with why; before, the exports were skipped
    without a word (exit 0) and so were a `.txt` and a `.png`."""
    folder = tmp_path / "mixed"
    (folder / "claude").mkdir(parents=True)
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (folder / "conversations.json").write_bytes((FIXTURES / "chatgpt_conversations.json").read_bytes())
    (folder / "claude" / "conversations.json").write_bytes((FIXTURES / "claude_conversations.json").read_bytes())
    (folder / "chat.jsonl").write_text(jsonl({"conversation": "notes", "id": "1", "text": "I adopted a beagle."}))
    (folder / "notes.txt").write_text("buy dog food")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    (folder / "user.json").write_text('{"email": "me@example.com"}')
    result = cli("--db", str(db_path), "ingest", str(folder), "--json")
    assert result.exit_code == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert report["exports"] == {str(folder / "claude" / "conversations.json"): "claude",
                                 str(folder / "conversations.json"): "chatgpt"}
    names = {name for name, _, _ in stored(db_path)}
    assert "notes" in names and len(names) == 1 + 2 + 2  # the JSONL's chat, ChatGPT's two, Claude's two
    assert report["files_skipped"] == [
        {"file": str(folder / ".git") + "/", "why": "hidden"},
        {"file": str(folder / "notes.txt"), "why": "text, not JSONL"},
        {"file": str(folder / "photo.png"), "why": "an image"},
        {"file": str(folder / "user.json"), "why": "JSON, not a chat export cuemem recognises (another format is read "
                                                   "when named)"}]
    said = cli("--db", str(tmp_path / "again.db"), "ingest", str(folder))
    assert said.exit_code == 0, said.stderr
    assert f"read {folder / 'conversations.json'} as a ChatGPT export" in said.stderr
    assert (f"skipped 4 files: {folder / '.git'}/ (hidden), {folder / 'notes.txt'} (text, not JSONL), "
            f"{folder / 'photo.png'} (an image), {folder / 'user.json'} (JSON, not a chat export") in said.stderr


def test_a_chat_export_is_recognised_without_from_as_a_zip_or_a_file(cli, db_path, tmp_path):
    import zipfile

    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("conversations.json", (FIXTURES / "chatgpt_conversations.json").read_bytes())
        z.writestr("chat.html", "<html>")
    named = cli("--db", str(tmp_path / "named.db"), "ingest", "--from", "chatgpt", str(archive))
    assert named.exit_code == 0, named.stderr
    result = cli("--db", str(db_path), "ingest", str(archive), "--json")
    assert result.exit_code == 0, result.stderr
    assert stored(db_path) == stored(tmp_path / "named.db")  # as --from chatgpt stores it
    assert orjson.loads(result.stdout)["files_skipped"] == [{"file": f"{archive}/chat.html", "why": "HTML"}]
    claude = cli("--db", str(tmp_path / "c.db"), "ingest", str(FIXTURES / "claude_conversations.json"), "--json")
    assert claude.exit_code == 0, claude.stderr
    assert orjson.loads(claude.stdout)["exports"] == {str(FIXTURES / "claude_conversations.json"): "claude"}


def test_a_json_file_of_another_format_is_refused_with_the_from_that_reads_it(cli, db_path, tmp_path):
    locomo = tmp_path / "bench.json"
    locomo.write_text(json.dumps([{"sample_id": "conv-1", "conversation": {"speaker_a": "A", "session_1": []}}],
                                 indent=2))
    result = cli("--db", str(db_path), "ingest", str(locomo))
    assert result.exit_code == 1
    assert result.stderr == (f"error: {locomo}: a LoCoMo file, not message JSONL\n"
                             "hint: read it as the locomo format: --from FORMAT\n")
    document = tmp_path / "settings.json"
    document.write_text(json.dumps({"theme": "dark", "font": 12}, indent=2))
    result = cli("--db", str(db_path), "ingest", str(document))
    assert result.exit_code == 1
    assert f"{document}: one JSON document of no shape cuemem knows, not message JSONL" in result.stderr
    assert not db_path.exists()


def test_a_text_file_is_said_not_to_be_a_dialogue_in_one_line(cli, db_path, tmp_path):
    """`cuemem ingest README.md`: before, "92 invalid lines (nothing stored)" quoting ten of them and a hint
    to pass --skip-invalid; a file that is no dialogue at all is said to be so once, with the formats there are."""
    readme = REPO / "README.md"
    result = cli("--db", str(db_path), "ingest", str(readme))
    assert result.exit_code == 1
    error, hint = result.stderr.splitlines()
    assert error == f"error: {readme}: not a dialogue: no line of it is JSON"
    assert hint.startswith("hint: cuemem reads chats as message JSONL") and "docs/input-formats.md" in hint
    assert hint.endswith(": --from FORMAT")  # the CLI's name for the format
    assert "--skip-invalid" not in result.stderr and not db_path.exists()
    with_chat = cli("--db", str(db_path), "ingest", str(REPO / "sample_dialogues" / "maya_and_leo.jsonl"), str(readme))
    assert with_chat.exit_code == 1
    assert with_chat.stderr.splitlines()[0] == f"error: {readme}: not a dialogue: no line of it is JSON"
    assert not db_path.exists()


def test_messages_handed_over_in_a_call_are_checked_in_one_place_with_one_error(db_path):
    """`Memory.add` and the MCP server's `remember` take message dicts, not a file: both check them with
    input.jsonl.checked_messages and refuse a batch with a bad one in the same words, storing nothing."""
    from cuemem_cli.errors import CuememError
    from cuemem_cli.mcp_server import MemoryTools
    from cuemem_cli.memory import Memory

    messages = [{"text": "I moved to Denver.", "id": "a"}, {"speaker": "Maya", "id": "b"},
                {"text": "We met on the 42nd of May.", "time": "the 42nd of May", "id": "c"}]
    errors = []
    with Memory(db_path) as memory:
        with pytest.raises(CuememError) as added:
            memory.add(messages, conversation="c")
        errors.append(added.value)
    tools = MemoryTools(db_path)
    try:
        with pytest.raises(CuememError) as remembered:
            tools.remember("c", messages)
        errors.append(remembered.value)
    finally:
        tools.close()
    said = [(error.message, error.hint) for error in errors]
    assert said[0] == said[1]
    message, hint = said[0]
    assert message.startswith("2 invalid messages, nothing stored: messages[1]: missing or empty 'text'")
    assert "; messages[2]: cannot read time 'the 42nd of May'" in message
    assert hint == "every message needs its text; use ISO 8601 (2023-05-08T13:56:00) or e.g. '1:56 pm on 8 May, 2023'"
    assert not db_path.exists()
