"""`cuemem browse` without a browser: a real server (a `cuemem browse` subprocess) on a real memory (the
sample dialogues and a conversation of hostile text, ingested by `cuemem ingest`), asked over HTTP.

What the pages show is checked against the CLI on the same database (`ask --context-only --json`,
`inspect-graph --format json`), on SQLite and on PostgreSQL; the refusals (token, Host, cross-site), the
escaping of stored text and the command's own errors on SQLite. tests/test_browse_browser.py renders the
same pages in Chromium.

Tiers (tests/README.md): a test on a built memory is `slow` and `subprocess` (its ingest and server are
processes running the real models), and `postgres` on that backend; the pure parts at the end are fast.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote, urlencode, urlsplit

import orjson
import pytest

from conftest import CUEMEM, PYTHON, SAMPLES, chat_completion, child_env, new_pg_database, send_json, tier

pytest.importorskip("starlette", reason="`cuemem browse` needs the browse extra: pip install 'cuemem[browse]'")

HOSTILE = '"><svg onload=alert(1)>'  # a conversation name that is itself markup
TITLE = "Mischief <script>window.__pwned = 'title'</script>"
SCRIPT = "<script>window.__pwned = 'turn'; alert(1)</script> breaking the page"
IMAGE = '<img src=x onerror="window.__pwned = \'img\'"> a picture of the beagle'
LINK = '<a href="javascript:window.__pwned=1">click me</a> and [me](javascript:alert(1)) too'
CODE = "Here is the fix:\n```python\ndef f(x):\n    if x < 3 and x > 1:\n        return '<b>'\n```\nDone."
LONG = " ".join(f"Sentence {i} about the long trip to Lisbon." for i in range(300))
PROBE = "breaking"  # a word only SCRIPT's turn says


def hostile_lines() -> list[dict]:
    texts = [SCRIPT, IMAGE, LINK, CODE, LONG, "Fine, nothing to see here."]
    return [{"conversation": HOSTILE, "title": TITLE, "session": "s1", "time": f"2024-06-01T10:{i:02d}:00",
             "speaker": "Mallory <b>bold</b>" if i % 2 == 0 else "Trent", "text": text, "id": f"h:{i}"}
            for i, text in enumerate(texts)]


def cuemem(db: str, *args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    """`cuemem --db DB ARGS` as a process, importing the cuemem_cli this test run does (conftest.CUEMEM)."""
    return subprocess.run([*CUEMEM, "--db", db, *args], capture_output=True, text=True, env=child_env(), cwd=cwd,
                          timeout=600, **kwargs)


def build_memory(db: str, folder: Path) -> None:
    """The two sample dialogues and the hostile conversation, in one ingest."""
    source = folder / "all.jsonl"
    files = [SAMPLES / "assistant_chat.jsonl", SAMPLES / "maya_and_leo.jsonl"]  # not the held-out ones added since
    lines = [line for f in files for line in f.read_text().splitlines() if line.strip()]
    source.write_text("\n".join(lines + [orjson.dumps(x).decode() for x in hostile_lines()]) + "\n")
    done = cuemem(db, "ingest", str(source), "--json", cwd=folder)
    assert done.returncode == 0, done.stderr


@dataclass
class Server:
    url: str  # http://127.0.0.1:PORT/TOKEN/
    db: str
    folder: Path
    process: subprocess.Popen

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 0

    @property
    def root(self) -> str:
        return urlsplit(self.url).path  # /TOKEN/

    def get(self, path: str, headers: dict[str, str] | None = None, method: str = "GET", raw_path: bool = False,
            timeout: float = 120) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of a request for `path` under the token (or exactly `path`, raw_path)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            target = path if raw_path else self.root + path
            wanted = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in wanted.items():
                conn.putheader(name, value)
            conn.endheaders()
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            conn.close()

    def html(self, path: str) -> str:
        status, _, body = self.get(path)
        assert status == 200, body[:500]
        return body.decode()

    def json(self, path: str, **params: str) -> dict:
        status, headers, body = self.get(path + ("?" + urlencode(params) if params else ""))
        assert status == 200, body[:500]
        assert headers["content-type"].startswith("application/json")
        return orjson.loads(body)


def start_server(db: str, folder: Path, *args: str, extra_env: dict[str, str] | None = None) -> Server:
    process = subprocess.Popen([*CUEMEM, "--db", db, "browse", "--no-open", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=child_env(**(extra_env or {})), cwd=folder)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("http://"):
            raise AssertionError(f"no address printed: {line!r} {process.communicate(timeout=30)[1][-2000:]}")
        server = Server(line.strip(), db, folder, process)
        deadline = time.monotonic() + 60
        while True:  # the address is printed once the socket listens; the first answer proves the app is up
            try:
                server.get("")
                return server
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    except BaseException:  # a failed start, or Ctrl-C: no server is left behind
        process.kill()
        process.wait()
        raise


def stop(server: Server) -> tuple[int, str]:
    """Ctrl-C, as a user stops it: (exit code, stderr). One that does not stop within a minute is killed."""
    server.process.send_signal(signal.SIGINT)
    try:
        _, stderr = server.process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.process.kill()
        _, stderr = server.process.communicate()
    return server.process.returncode, stderr


@pytest.fixture(scope="module")
@tier("slow", "subprocess")
def sqlite_memory(tmp_path_factory) -> str:
    """The SQLite memory of this module's servers, built once."""
    folder = tmp_path_factory.mktemp("browse-sqlite")
    build_memory(str(folder / "memory.db"), folder)
    return str(folder / "memory.db")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@tier("slow", "subprocess")
def served(request, tmp_path_factory) -> Iterator[Server]:
    """A browse server on a built memory, per backend, for the module."""
    if request.param == "sqlite":
        db = request.getfixturevalue("sqlite_memory")
        yield from _serve(db, Path(db).parent)
        return
    folder = tmp_path_factory.mktemp("browse-postgres")
    with new_pg_database(request.getfixturevalue("postgres_server")) as url:
        build_memory(url, folder)
        yield from _serve(url, folder)


@pytest.fixture(scope="module")
def sqlite_served(sqlite_memory) -> Iterator[Server]:
    """A server of its own on the SQLite memory, for the checks that need no second backend."""
    yield from _serve(sqlite_memory, Path(sqlite_memory).parent)


def _serve(db: str, folder: Path) -> Iterator[Server]:
    server = start_server(db, folder)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            stop(server)


def cli_json(server: Server, *args: str) -> dict:
    done = cuemem(server.db, *args, cwd=server.folder)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def turn_id(server: Server, conversation: str, source_id: str) -> int:
    detail = cli_json(server, "inspect-graph", "-c", conversation, "--turn", source_id, "--format", "json")
    return detail["turn"]["id"]


# ------------------------------------------------------------------ what the pages show, on both backends
def test_the_list_shows_every_conversation_with_title_dates_and_counts(served):
    listed = served.json("api/conversations")
    counts = {c["conversation"]: c for c in cli_json(served, "inspect-graph", "--format", "json")["conversations"]}
    assert listed["total"] == 3 and {c["conversation"] for c in listed["conversations"]} == set(counts)
    for row in listed["conversations"]:
        stats = counts[row["conversation"]]
        assert (row["turns"], row["cues"]) == (stats["turns"], stats["cues"])
        assert (row["first_time"], row["last_time"]) == (stats["first_time"], stats["last_time"])
    titles = {c["conversation"]: c["title"] for c in listed["conversations"]}
    assert titles == {"maya-and-leo": None, "assistant-chat": None, HOSTILE: TITLE}
    last = [c["last_time"] for c in listed["conversations"]]
    assert last == sorted(last, reverse=True)  # the most recently said first
    page = served.html("")
    assert "maya-and-leo" in page and "assistant-chat" in page


def test_search_finds_turns_by_their_words_and_conversations_by_title(served):
    found = served.json("api/conversations", q="beagle Biscuit")
    hits = [(t["conversation"], t["source_id"]) for t in found["turns"]]
    assert ("maya-and-leo", "s2:9") in hits  # "His name is Biscuit, he's a beagle"
    for t in found["turns"]:
        assert re.search(r"beagle", t["text"], re.I) and re.search(r"biscuit", t["text"], re.I)
    assert found["conversations"] == []  # no conversation is named so
    by_title = served.json("api/conversations", q="mischief")
    assert [c["conversation"] for c in by_title["conversations"]] == [HOSTILE]
    page = served.html("?" + urlencode({"q": "beagle"}))
    assert "<mark>beagle</mark>" in page.lower()
    syntax = served.json("api/conversations", q='beagle" OR * NEAR(Biscuit) -"')  # words only, no search syntax:
    assert all("near" in t["text"].lower() for t in syntax["turns"])  # NEAR is a word to find, like the others
    assert served.json("api/conversations", q="?!")["turns"] == []


def test_a_conversation_reads_in_order_with_each_turns_cues(served):
    data = served.json("api/conversation", name="maya-and-leo")
    turns = data["turns"]
    assert [t["position"] for t in turns] == list(range(84)) and data["pages"] == 1
    assert turns[0]["source_id"] == "s1:1" and turns[-1]["source_id"] == "s4:20"
    detail = cli_json(served, "inspect-graph", "-c", "maya-and-leo", "--turn", "s2:9", "--format", "json")
    [shown] = [t for t in turns if t["source_id"] == "s2:9"]
    assert shown["cues"] == detail["cues"] and shown["id"] == detail["turn"]["id"]
    page = served.html("conversation?" + urlencode({"name": "maya-and-leo"}))
    assert page.count('class="turn ') == 84
    assert served.get("conversation?name=nobody")[0] == 404
    assert served.get("conversation?name=maya-and-leo&page=x")[0] == 400


def test_a_turn_page_lists_every_edge_and_draws_its_neighbourhood(served):
    detail = cli_json(served, "inspect-graph", "-c", "maya-and-leo", "--turn", "s2:9", "--format", "json")
    data = served.json(f"api/turn/{detail['turn']['id']}")
    assert data["cues"] == detail["cues"]
    listed = [(n["direction"], n["kind"], n["turn"]["source_id"], n["rank"]) for n in data["neighbours"]]
    assert sorted(listed) == sorted((n["direction"], n["kind"], n["turn"], n["rank"]) for n in detail["neighbours"])
    nodes = [n["id"] for n in data["graph"]["nodes"]]
    neighbour_ids = {n["turn"]["id"] for n in data["neighbours"]}
    assert set(nodes) == {detail["turn"]["id"]} | neighbour_ids  # fewer than 40: every one drawn
    assert data["graph"]["hidden"] == 0
    centre = detail["turn"]["id"]
    assert {(e["src"], e["dst"], e["kind"]) for e in data["graph"]["edges"] if centre in (e["src"], e["dst"])} \
        == {(*sorted((e["src"], e["dst"])), e["kind"]) for e in detail["edges"]}
    assert all(e["src"] in nodes and e["dst"] in nodes for e in data["graph"]["edges"])
    page = served.html(f"turn/{detail['turn']['id']}")
    assert sorted(int(i) for i in re.findall(r'<a class="node [a-z]+" href="[^"]+" data-turn="(\d+)"', page)) \
        == sorted(nodes)
    assert served.get("turn/999999")[0] == 404


QUESTIONS = ["What breed is the dog Maya adopted?", "When did Maya move to Denver?"]


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_question_box_shows_what_ask_context_only_hands_a_model(served, question):
    cli = cli_json(served, "ask", question, "-c", "maya-and-leo", "--context-only", "--json")
    api = served.json("api/context", q=question, c="maya-and-leo")
    fields = ("source_id", "via", "score", "cue", "text", "tokens")
    assert [[e[f] for f in fields] for e in api["evidence"]] == [[e[f] for f in fields] for e in cli["evidence"]]
    assert api["cues"] == cli["cues"] and api["tokens"] == cli["tokens"] and api["answer"] is None
    page = served.html("ask?" + urlencode({"q": question, "c": "maya-and-leo"}))
    shown = re.findall(r'<li class="ev [a-z]+" data-source-id="([^"]+)"', page)
    assert shown == [e["source_id"] for e in cli["evidence"]]


def test_the_question_box_answers_as_ask_does_offline_and_writes_nothing(served):
    answered = served.json("api/ask", q=QUESTIONS[0], c="maya-and-leo")
    assert answered["answer_kind"] == "extractive" and "beagle" in answered["answer"].lower()
    assert served.html("ask?" + urlencode({"q": QUESTIONS[0], "c": "maya-and-leo"})).count("beagle") > 1
    assert _retrieved(served) == set()  # the browser recorded no retrieval
    cli = cli_json(served, "ask", QUESTIONS[0], "-c", "maya-and-leo", "--json")
    assert answered["answer"] == cli["answer"] and answered["evidence"] == cli["evidence"]
    assert answered["answer_form"] == cli["answer_form"] in ("answer", "quote")  # the same line, said to be the same
    page = served.html("ask?" + urlencode({"q": QUESTIONS[0], "c": "maya-and-leo"}))
    label = {"answer": "answer: ", "quote": "best match: "}[cli["answer_form"]]
    from cuemem_cli.browse.app import markdown

    shown = str(markdown(label + cli["answer"].splitlines()[0])).strip()
    assert shown.startswith("<p>") and shown.removeprefix("<p>").removesuffix("</p>") in page  # as the page renders it
    assert _retrieved(served) == {e["source_id"] for e in cli["evidence"]}  # `ask` does: the check can see one


def _retrieved(server: Server) -> set[str]:
    """Source ids of maya-and-leo's turns an ask marked as used (what `forget --lru` reads)."""
    sql = ("SELECT t.source_id FROM turns t JOIN conversations c ON c.id = t.conversation_id"
           " WHERE c.name = 'maya-and-leo' AND t.last_retrieved_at IS NOT NULL")
    if server.db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(server.db) as conn:
            return {r[0] for r in conn.execute(sql)}
    from conftest import raw

    conn = raw(server.db)
    try:
        return {r[0] for r in conn.execute(sql)}
    finally:
        conn.close()


def test_a_question_ranges_over_every_conversation_as_ask_does(served):
    cli = cli_json(served, "ask", QUESTIONS[0], "--context-only", "--json")
    api = served.json("api/context", q=QUESTIONS[0])
    assert api["conversations"] == cli["conversations"] == []
    fields = ("conversation", "title", "source_id", "via", "score", "text")
    assert [[e[f] for f in fields] for e in api["evidence"]] == [[e[f] for f in fields] for e in cli["evidence"]]
    assert {e["conversation"] for e in api["evidence"]} >= {"maya-and-leo"}
    page = served.html("ask?" + urlencode({"q": QUESTIONS[0]}))
    assert 'role="alert"' not in page and '<option value="" selected>all conversations</option>' in page
    shown = re.findall(r'<li class="ev [a-z]+" data-source-id="([^"]+)"', page)
    assert shown == [e["source_id"] for e in cli["evidence"]]


def test_the_question_graph_draws_the_evidence_and_the_edges_one_hop_followed(served):
    data = served.json("api/conversation", name="maya-and-leo")
    by_source = {t["source_id"]: t["id"] for t in data["turns"]}
    cli = cli_json(served, "ask", QUESTIONS[1], "-c", "maya-and-leo", "--context-only", "--json")
    page = served.html("ask?" + urlencode({"q": QUESTIONS[1], "c": "maya-and-leo"}))
    drawn = [int(i) for i in re.findall(r'<a class="node [a-z]+" href="[^"]+" data-turn="(\d+)"', page)]
    assert drawn == [by_source[e["source_id"]] for e in cli["evidence"]]  # chronological, as the evidence
    roles = re.findall(r'<a class="node ([a-z]+)"', page)
    assert roles == [e["via"] for e in cli["evidence"]]
    via = dict(zip(drawn, roles, strict=True))
    edges = [(int(a), int(b)) for a, b in re.findall(r'<path class="edge [a-z ]+" d="[^"]+" stroke-width="[^"]+" '
                                                     r'data-src="(\d+)" data-dst="(\d+)"', page)]
    brought = [i for i in drawn if via[i] in ("temporal", "semantic")]
    assert brought and edges  # the edges that brought a turn in over the graph: one end found directly
    assert all({via[a], via[b]} & {"anchor", "lexical"} and {via[a], via[b]} & {"temporal", "semantic"}
               for a, b in edges)


class _StubLLM(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint on 127.0.0.1: a reply with markup in it, or a refusal (400) when
    the question says FAIL; a question that says SLOW is answered once the test lets it (`go_on`)."""

    arrived: ClassVar[threading.Event] = threading.Event()
    go_on: ClassVar[threading.Event] = threading.Event()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = " ".join(str(m.get("content")) for m in body["messages"])
        if "SLOW" in prompt:
            _StubLLM.arrived.set()
            _StubLLM.go_on.wait(60)
        if "FAIL" in prompt:
            send_json(self, 400, {"error": {"message": "bad request", "type": "invalid_request_error"}})
            return
        text = f"A beagle <script>window.__pwned = 'llm'</script> ({'Biscuit' if 'Biscuit' in prompt else '?'})"
        send_json(self, 200, chat_completion(body["model"], text))

    def log_message(self, *args):
        pass


def test_with_a_model_the_box_shows_its_answer_as_text_and_its_failure_beside_the_evidence(sqlite_served):
    stub = ThreadingHTTPServer(("127.0.0.1", 0), _StubLLM)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    llm_env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{stub.server_port}/v1", "OPENAI_API_KEY": "test-key"}
    server = start_server(sqlite_served.db, sqlite_served.folder, "--model", "openai/stub", extra_env=llm_env)
    try:
        answered = server.json("api/ask", q=QUESTIONS[0], c="maya-and-leo")
        assert (answered["answer_kind"], answered["model"]) == ("llm", "openai/stub")
        assert answered["answer"] == "A beagle <script>window.__pwned = 'llm'</script> (Biscuit)"  # it read evidence
        page = server.html("ask?" + urlencode({"q": QUESTIONS[0], "c": "maya-and-leo"}))
        assert "Answer · openai/stub" in page and "A beagle &lt;script&gt;" in page and "<script" not in page
        failed = server.json("api/ask", q="FAIL: " + QUESTIONS[0], c="maya-and-leo")
        assert "openai/stub failed" in failed["error"] and failed["answer"] is None and failed["evidence"]
        page = server.html("ask?" + urlencode({"q": "FAIL: " + QUESTIONS[0], "c": "maya-and-leo"}))
        assert "the model failed" in page and 'class="ev ' in page
        slow: list = []
        asking = threading.Thread(target=lambda: slow.append(server.json("api/ask", q="SLOW: " + QUESTIONS[0],
                                                                         c="maya-and-leo")))
        asking.start()
        assert _StubLLM.arrived.wait(120)
        status, _, listed = server.get("api/conversations", timeout=20)  # the model waits up to 60 s
        assert status == 200 and orjson.loads(listed)["total"] == 3  # served while the model is still writing
        _StubLLM.go_on.set()
        asking.join(120)
        assert slow and slow[0]["answer_kind"] == "llm"
    finally:
        _StubLLM.go_on.set()
        stop(server)
        stub.shutdown()


# ------------------------------------------------------------- pages.py in-process: pagination, both backends
def test_long_conversations_are_read_a_page_of_positions_at_a_time(served, monkeypatch):
    from cuemem_cli.browse import pages
    from cuemem_cli.memory import Memory

    monkeypatch.setattr(pages, "PAGE_TURNS", 10)
    monkeypatch.setattr(pages, "PAGE_CONVERSATIONS", 2)
    with Memory(served.db, create=False) as memory:
        third = pages.conversation(memory, "maya-and-leo", page=3)
        assert [t["position"] for t in third["turns"]] == list(range(30, 40)) and third["pages"] == 9
        target = third["turns"][4]
        assert pages.conversation(memory, "maya-and-leo", at=target["id"])["page"] == 3
        with pytest.raises(pages.NotFound):
            pages.conversation(memory, "assistant-chat", at=target["id"])  # not a turn of that conversation
        first, second = pages.conversations(memory, None, 0), pages.conversations(memory, None, 1)
        assert first["pages"] == 2 and len(first["conversations"]) == 2 and len(second["conversations"]) == 1
        listed = [c["conversation"] for c in first["conversations"] + second["conversations"]]
        assert sorted(listed) == sorted([HOSTILE, "maya-and-leo", "assistant-chat"])


# ---------------------------------------------------------------------------------- refusals (SQLite)
def test_without_this_runs_token_nothing_is_readable(sqlite_served):
    server = sqlite_served
    token = server.root.strip("/")
    wrong = "x" * len(token)
    for path in ["/", "/api/conversations", f"/{wrong}/", f"/{wrong}/api/conversations", f"/{token}x/",
                 f"/{token[:-1]}/", "/static/browse.css", f"/api/turn/1?token={token}"]:
        status, _, body = server.get(path, raw_path=True)
        assert status == 403, path
        assert b"maya" not in body.lower()
    assert server.get(f"/{token}", raw_path=True)[0] == 307  # the address without its last slash
    assert server.get(f"/{token}/", raw_path=True)[0] == 200


def test_foreign_hosts_and_cross_site_requests_are_refused(sqlite_served):
    server = sqlite_served
    for host in ["evil.example", f"evil.example:{server.port}", f"127.0.0.1:{server.port + 1}", "127.0.0.1",
                 f"192.168.1.10:{server.port}"]:
        status, _, body = server.get("api/conversations", {"Host": host})
        assert status == 421 and b"maya" not in body.lower(), host
    assert server.get("api/conversations", {"Host": f"localhost:{server.port}"})[0] == 200
    for headers in [{"Origin": "http://evil.example"}, {"Origin": f"http://127.0.0.1:{server.port + 1}"},
                    {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}]:
        status, _, body = server.get("api/conversations", headers)
        assert status == 403 and b"maya" not in body.lower(), headers
    for headers in [{"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"},
                    {"Origin": f"http://127.0.0.1:{server.port}"}]:
        assert server.get("api/conversations", headers)[0] == 200, headers


def test_every_answer_forbids_scripts_framing_and_caching_and_nothing_writes(sqlite_served):
    server = sqlite_served
    for path in ["", "api/conversations", "static/browse.css"]:
        status, headers, _ = server.get(path)
        assert status == 200
        policy = headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy and "frame-ancestors 'none'" in policy
        assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"
        assert headers["referrer-policy"] == "no-referrer" and headers["x-content-type-options"] == "nosniff"
    assert server.get("/", raw_path=True)[1]["x-frame-options"] == "DENY"  # refusals too
    for method in ["POST", "PUT", "DELETE"]:
        assert server.get("api/conversations", method=method)[0] == 405


def test_it_listens_on_127_0_0_1_only(sqlite_served):
    table = Path("/proc/net/tcp")
    if not table.exists():
        pytest.skip("reads Linux's /proc/net/tcp")
    port = f"{sqlite_served.port:04X}"
    listening = [line.split()[1] for line in table.read_text().splitlines()[1:]
                 if line.split()[1].endswith(f":{port}") and line.split()[3] == "0A"]  # 0A: LISTEN
    assert listening == [f"0100007F:{port}"]  # 127.0.0.1, not 0.0.0.0
    six = Path("/proc/net/tcp6")
    assert not six.exists() or f":{port} " not in six.read_text()


# ------------------------------------------------------------------------------ hostile text (SQLite)
def _hostile_pages(server: Server) -> dict[str, str]:
    listed = server.json("api/conversation", name=HOSTILE)["turns"]
    ids = {t["text"]: t["id"] for t in listed}
    return {
        "list": server.html(""),
        "search": server.html("?" + urlencode({"q": PROBE})),
        "conversation": server.html("conversation?" + urlencode({"name": HOSTILE})),
        "turn": server.html(f"turn/{ids[SCRIPT]}"),
        "image": server.html(f"turn/{ids[IMAGE]}"),
        "ask": server.html("ask?" + urlencode({"q": "Which picture of the beagle breaks the page?", "c": HOSTILE})),
    }


def test_hostile_text_is_shown_as_text_on_every_page(sqlite_served):
    for name, page in _hostile_pages(sqlite_served).items():
        lowered = page.lower()
        assert "<script" not in lowered, name  # the pages carry no script at all, so none may appear
        assert "<img" not in lowered and "onerror=" not in re.sub(r"onerror=&(#34|quot);", "", lowered), name
        assert "<svg onload" not in lowered and "<b>bold" not in lowered, name
        assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", page, re.I), name
        assert "&lt;script&gt;" in page or name == "image", name
    pages = _hostile_pages(sqlite_served)
    assert "&lt;img src=x onerror=&quot;window.__pwned = 'img'&quot;&gt; a picture of the beagle" in pages["image"]
    assert "Mischief &lt;script&gt;" in pages["list"] and "&#34;&gt;&lt;svg onload=alert(1)&gt;" in pages["list"]
    assert quote(HOSTILE, safe="") in pages["list"].replace("+", "%20")  # the name travels url-encoded


def test_long_turns_and_code_render_whole_and_readable(sqlite_served):
    page = sqlite_served.html("conversation?" + urlencode({"name": HOSTILE}))
    assert LONG in page and '<div class="text long">' in page
    code = re.search(r'<pre><code class="language-python">(.*?)</code></pre>', page, re.S)
    assert code and code.group(1) == "def f(x):\n    if x &lt; 3 and x &gt; 1:\n        return '&lt;b&gt;'\n"


# ------------------------------------------------------------------------------------- the command
def test_ctrl_c_stops_it_cleanly_and_the_address_is_alone_on_stdout(sqlite_served):
    server = start_server(sqlite_served.db, sqlite_served.folder)
    assert server.get("")[0] == 200
    code, stderr = stop(server)
    assert code == 0, stderr
    assert "Traceback" not in stderr and stderr.strip().endswith("stopped")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]{32}/", server.url)
    assert "read-only" in stderr


def test_a_port_in_use_a_missing_database_and_a_missing_extra_are_explained(sqlite_served, tmp_path):
    done = cuemem(sqlite_served.db, "browse", "--no-open", "--port", str(sqlite_served.port), cwd=tmp_path)
    assert done.returncode == 1 and f"port {sqlite_served.port}" in done.stderr and "--port" in done.stderr
    assert done.stdout == ""
    done = cuemem(str(tmp_path / "none.db"), "browse", "--no-open", cwd=tmp_path)
    assert done.returncode == 1 and "no cuemem database" in done.stderr and not (tmp_path / "none.db").exists()
    blocked = ("import sys; sys.modules['starlette'] = None; sys.argv = ['cuemem', '--db', sys.argv[1], 'browse'];"
               " from cuemem_cli.cli.app import run; run()")
    done = subprocess.run([*PYTHON, "-c", blocked, sqlite_served.db], capture_output=True, text=True,
                          env=child_env(), cwd=tmp_path, timeout=120)
    assert done.returncode == 1 and "pip install 'cuemem[browse]'" in done.stderr and "starlette" in done.stderr


@pytest.mark.subprocess
def test_cuemem_help_imports_no_web_package(tmp_path):
    probe = ("import sys, cuemem_cli.cli.app;"
             " print(sorted(m for m in ('starlette', 'uvicorn', 'jinja2') if m in sys.modules))")
    done = subprocess.run([*PYTHON, "-c", probe], capture_output=True, text=True, env=child_env(), cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


# ------------------------------------------------------------- concurrent requests, in-process
def test_concurrent_requests_are_served_at_once_each_on_a_connection_of_its_own(tmp_path, stub_models, monkeypatch):
    """Up to READERS requests are inside a page at once, each reading through its own database connection; more
    wait for one and are all answered (16 at once: issue 58 found them served one at a time). Each turn page
    waits until READERS of them are in it together: served one at a time, none would get past."""
    from concurrent.futures import ThreadPoolExecutor

    from starlette.testclient import TestClient

    from cuemem_cli import Memory
    from cuemem_cli.browse import app as browse, pages

    db = tmp_path / "m.db"
    with Memory(db) as memory:
        memory.add([{"conversation": "chat", "speaker": "Maya" if i % 2 else "Leo", "text": f"Turn {i} about dogs."}
                    for i in range(6)])
    together = threading.Barrier(browse.READERS, timeout=30)
    connections: set[int] = set()
    real = pages.turn

    def turn(memory, turn_id):
        connections.add(id(memory.store))
        together.wait()
        return real(memory, turn_id)

    monkeypatch.setattr(pages, "turn", turn)
    with Memory(db, create=False) as memory:
        client = TestClient(browse.create_app(memory, None, "token", 8123, str(db)), base_url="http://127.0.0.1:8123")
        with ThreadPoolExecutor(16) as pool:
            answered = list(pool.map(lambda i: client.get(f"/token/api/turn/{1 + i % 6}"), range(16)))
        assert [r.status_code for r in answered] == [200] * 16
        assert [r.json()["turn"]["id"] for r in answered] == [1 + i % 6 for i in range(16)]
        assert len(connections) == browse.READERS  # one per request at once, kept for the next ones
        assert client.get("/token/api/conversations").json()["total"] == 1


# ---------------------------------------------------------------------------------------- pure parts
def test_the_picture_lays_turns_out_by_time_and_edges_by_kind():
    from cuemem_cli.browse.picture import AXIS, draw
    from cuemem_cli.records import Turn

    turns = [Turn(3, "c", 2, "c:3", "later", time="2023-05-02T10:00:00"),
             Turn(1, "c", 0, "c:1", "first", time="2023-05-01T09:00:00"),
             Turn(2, "c", 1, "c:2", "second", time="2023-05-01T09:05:00")]
    edges = [(1, 2, "temporal", 1.0, 1), (2, 1, "temporal", 0.5, 1), (3, 1, "semantic", 0.7, 1),
             (1, 3, "semantic", 0.9, 2), (3, 99, "semantic", 0.8, 1)]  # 99 is not drawn
    picture = draw(turns, edges, {1: "center", 2: "temporal", 3: "semantic"})
    assert [n.id for n in picture.nodes] == [1, 2, 3]
    assert [n.x for n in picture.nodes] == sorted(n.x for n in picture.nodes)
    links = {(e.src, e.dst, e.kind): e for e in picture.links}
    assert set(links) == {(1, 2, "temporal"), (1, 3, "semantic")}
    assert links[(1, 3, "semantic")].weight == 0.9  # both directions, drawn once at the best weight
    control = lambda link: float(link.path.split()[5])  # noqa: E731  (M x y Q cx cy x y)
    assert control(links[(1, 3, "semantic")]) < AXIS < control(links[(1, 2, "temporal")])
    assert not any(e.aside for e in picture.links)  # every edge touches the centre
    assert [(m.label, m.row) for m in picture.marks] == [("1 May 2023", 0), ("2 May 2023", 0)]  # a mark a day


def test_the_pictures_labels_say_when_and_which_chat_and_never_overlap():
    """Labelled by the day (and the chat, once turns come from several), level, on two rows, a label that
    has room on neither left out (its mark's tooltip still says it); not each turn's id, which for an export
    is a 36-character UUID that the slanted labels ran over each other with."""
    from cuemem_cli.browse.picture import CHAR, RADIUS, draw
    from cuemem_cli.records import Turn

    uuid = "1d9f6eb2-9aef-5c09-ad7e-f62d810480f9"
    turns = [Turn(i, f"chat-{i % 3}", i, f"{uuid}-{i}", "text", time=f"2023-05-{1 + i // 2:02d}T10:00:00",
                  title=["Lisbon trip", "A very long title for a chat about nothing in particular", None][i % 3])
             for i in range(40)]
    picture = draw(turns, [], {t.id: "anchor" for t in turns})
    labels = [m for m in picture.marks if m.label]
    assert len(picture.marks) == 40 and 5 < len(labels) < 40  # a run per turn here: not all have room
    assert not any(uuid in m.label or uuid in m.run for m in picture.marks)
    assert labels[0].label == "Lisbon trip · 1 May 2023"
    assert any(m.label.startswith("A very long title for a…") for m in labels)  # clipped; the tooltip has it whole
    assert any(m.run.startswith("A very long title for a chat about nothing") for m in picture.marks)
    assert {m.row for m in labels} == {0, 1}
    for row in (0, 1):
        spans = sorted((m.x - RADIUS, m.x - RADIUS + len(m.label) * CHAR) for m in labels if m.row == row)
        assert all(left >= right for (_, right), (left, _) in pairwise(spans)), f"row {row} overlaps"
        assert all(right <= picture.width for _, right in spans)
    one_chat = draw(turns[::3], [], {})
    shown = [m for m in one_chat.marks if m.label]
    assert shown and all(m.label == m.run for m in shown)  # one chat: the day alone
    assert all(m.label.endswith("2023") and "·" not in m.label for m in shown)


def test_a_turns_markdown_is_rendered_without_its_html_links_or_images():
    """Lists, code blocks, emphasis and tables as a chat app shows them; raw HTML escaped, and no link or
    image made from stored text (no target it chose, nothing loaded)."""
    from cuemem_cli.browse.app import markdown

    assert markdown("plain") == "<p>plain</p>\n"
    assert markdown("Steps:\n1. Collect\n2. **Sort**\n\n- a\n- `b`") == (
        "<p>Steps:</p>\n<ol>\n<li>Collect</li>\n<li><strong>Sort</strong></li>\n</ol>\n"
        "<ul>\n<li>a</li>\n<li><code>b</code></li>\n</ul>\n")
    assert markdown("a\n```py\nx = 1 < 2\n```\nb") == (
        '<p>a</p>\n<pre><code class="language-py">x = 1 &lt; 2\n</code></pre>\n<p>b</p>\n')
    assert markdown("one\ntwo") == "<p>one<br />\ntwo</p>\n"  # a chat's line break is kept
    assert "<table>" in markdown("| a | b |\n|---|---|\n| 1 | 2 |")
    hostile = markdown('<script>alert(1)</script> <a href="javascript:x">y</a> [me](javascript:alert(1)) '
                       '![i](http://example.com/i.png) <http://example.com>\n\n[ref]: http://example.com')
    tags = re.findall(r"<([a-z]+)", hostile)
    assert set(tags) == {"p"}, tags  # no a, img or script element: the rest is escaped text
    assert "&lt;script&gt;" in hostile and "[me](javascript:alert(1))" in hostile
    assert "[ref]: http://example.com" in hostile  # a reference definition stays text, not a hidden link
