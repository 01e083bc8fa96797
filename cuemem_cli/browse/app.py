"""The web app of `cuemem browse`: a guard in front of every request, the pages and their JSON twins.

Who may read: the server listens on 127.0.0.1 only, and `Guard` answers only requests that
- carry this run's random token as the first part of their path (`/TOKEN/...`): another user of the
  machine can reach the port but not guess the token; in the path rather than a cookie because a cookie
  for 127.0.0.1 would also be sent to every other local port, whoever runs the server there;
- name this server in their Host header (127.0.0.1:PORT or localhost:PORT): a web page whose own name
  resolves to 127.0.0.1 (DNS rebinding) is refused;
- do not come from another site or origin (the browser's Sec-Fetch-Site and Origin headers): a page
  elsewhere cannot drive this one, and cannot frame it either.
Every response forbids scripts altogether (Content-Security-Policy without script-src: the pages have
none), framing and referrers, and is not cached. Stored text reaches HTML only through Jinja2's
autoescaping, or a turn's text through its markdown rendered with raw HTML escaped (`markdown`), and never
as a link target. Only GET (and HEAD) exist: nothing here writes.
"""

from __future__ import annotations

import hmac
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import files
from typing import Any
from urllib.parse import urlencode

import jinja2
import orjson
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import CuememError
from ..memory import Memory
from ..timeparse import format_human
from . import pages

SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'self'; img-src 'self' data:; "
                                 b"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
SAME_SITE = {b"none", b"same-origin"}  # Sec-Fetch-Site of a typed URL or a link of ours
FORBIDDEN = "forbidden: open the address `cuemem browse` printed (it holds this run's token)\n"


class Guard:
    """ASGI middleware: the refusals in the module docstring, then the app with the token as its root path
    (so routes see `/turn/5`, and links are built under `/TOKEN/`)."""

    def __init__(self, app: ASGIApp, token: str, port: int):
        self.app = app
        self.prefix = "/" + token
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self.origins = {b"http://" + host for host in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        if scope["type"] != "http":  # no websockets here
            await send({"type": "websocket.close", "code": 1008})
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send_guarded)
            return
        path = scope["path"]
        if path == self.prefix:
            query = scope.get("query_string", b"").decode("latin-1")
            await RedirectResponse(self.prefix + "/" + (f"?{query}" if query else ""))(scope, receive, send_guarded)
            return
        await self.app({**scope, "root_path": scope.get("root_path", "") + self.prefix}, receive, send_guarded)

    def refusal(self, scope: Scope) -> Response | None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), value)
        if headers.get(b"host") not in self.hosts:
            return PlainTextResponse("refused: this server answers only to 127.0.0.1 (Host header)\n", 421)
        site = headers.get(b"sec-fetch-site")
        origin = headers.get(b"origin")
        if (site is not None and site not in SAME_SITE) or (origin is not None and origin not in self.origins):
            return PlainTextResponse("refused: a request from another site or origin\n", 403)
        path = scope["path"]
        head = path[:len(self.prefix)]
        if not (hmac.compare_digest(head.encode(), self.prefix.encode())
                and (len(path) == len(self.prefix) or path[len(self.prefix)] == "/")):
            return PlainTextResponse(FORBIDDEN, 403)
        return None


# The page's words for what an error's hint is about (CuememError.fields): its question form's menu, and the
# command that adds dialogue (the page itself only reads).
FORM = {"conversation": "the conversation menu beside the question", "add": "cuemem ingest FILE"}


def form_hint(error: CuememError) -> str | None:
    return error.hint_in(FORM)


Build = Callable[[Memory], dict[str, Any]]  # what a page shows, read from the memory it is handed


class BadRequest(CuememError):
    """A malformed query parameter: HTTP 400."""


READERS = 4  # requests served at once, each on its own read connection (2 cores: more would only queue)


class Readers:
    """The server's read connections: up to READERS requests at once each get a `Memory` of their own (its own
    database connection and caches, the models shared: Memory.another, closed with the first), made when
    first needed; more wait for one. A request waiting on something that reads no memory (a model writing
    its answer) steps `aside`, and another request may work meanwhile on a connection of its own."""

    def __init__(self, first: Memory, size: int = READERS):
        self.size = size
        self._first = first
        self._idle: list[Memory] = [first]
        self._working = 0
        self._turn = threading.Condition()

    @contextmanager
    def memory(self) -> Iterator[Memory]:
        """A memory this request alone uses until it returns it (the one used last, whose caches are warm)."""
        self._enter()
        try:
            with self._turn:
                reader = self._idle.pop() if self._idle else None
            if reader is None:
                reader = self._first.another()
        except BaseException:
            self._leave()
            raise
        try:
            yield reader
        finally:
            with self._turn:
                self._idle.append(reader)
            self._leave()

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Inside `memory()`: let another request work while this one waits on something else."""
        self._leave()
        try:
            yield
        finally:
            self._enter()

    def _enter(self) -> None:
        with self._turn:
            while self._working >= self.size:
                self._turn.wait()
            self._working += 1

    def _leave(self) -> None:
        with self._turn:
            self._working -= 1
            self._turn.notify()


class Browser:
    """The pages over one `Memory`: its models load once, on the first question; each request reads through
    a connection of its own (`Readers`: Starlette runs these handlers in threads, so pages are served
    concurrently); a model writing an answer holds no reader, and other pages are served meanwhile."""

    def __init__(self, memory: Memory, model: str | None, db_shown: str, readers: int = READERS):
        self.readers = Readers(memory, readers)
        self.model = model
        self.db_shown = db_shown
        self.css = files("cuemem_cli.browse").joinpath("static/browse.css").read_bytes()
        self.templates = jinja2.Environment(loader=jinja2.PackageLoader("cuemem_cli.browse", "templates"),
                                            autoescape=True, undefined=jinja2.StrictUndefined,
                                            trim_blocks=True, lstrip_blocks=True)
        self.templates.filters.update(when=_when, highlight=_highlight, markdown=markdown)
        self.templates.globals["hint"] = form_hint

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home, methods=["GET"]),
            Route("/conversation", self.conversation, methods=["GET"]),
            Route("/turn/{turn_id:int}", self.turn, methods=["GET"]),
            Route("/ask", self.ask, methods=["GET"]),
            Route("/static/browse.css", self.stylesheet, methods=["GET"]),
            Route("/api/conversations", self.api_conversations, methods=["GET"]),
            Route("/api/conversation", self.api_conversation, methods=["GET"]),
            Route("/api/turn/{turn_id:int}", self.api_turn, methods=["GET"]),
            Route("/api/context", self.api_context, methods=["GET"]),
            Route("/api/ask", self.api_ask, methods=["GET"]),
        ]

    # ------------------------------------------------------------------ pages
    def home(self, request: Request) -> Response:
        search = request.query_params.get("q")
        return self._html(request, "conversations.html",
                          lambda memory: pages.conversations(memory, search, _page(request)))

    def conversation(self, request: Request) -> Response:
        return self._html(request, "conversation.html", lambda memory: self._conversation(memory, request))

    def turn(self, request: Request) -> Response:
        return self._html(request, "turn.html", lambda memory: pages.turn(memory, request.path_params["turn_id"]))

    def ask(self, request: Request) -> Response:
        text = (request.query_params.get("q") or "").strip()
        only = request.query_params.get("only") == "1"

        def build(memory: Memory) -> dict[str, Any]:
            data: dict[str, Any] = {"question": text, "only": only, "model": self.model, "result": None,
                                    "error": None}
            data["scope"] = pages.scope(memory, _chosen(request))
            if text:
                try:
                    data["result"] = pages.question(memory, text, data["scope"]["chosen"] or None,
                                                    self.model, answer=not only, unlocked=self.readers.aside)
                except CuememError as exc:  # e.g. a conversation since forgotten: shown beside the box
                    data["error"] = exc
            return data

        return self._html(request, "ask.html", build)

    def stylesheet(self, request: Request) -> Response:
        return Response(self.css, media_type="text/css")

    # ------------------------------------------------------------------- JSON
    def api_conversations(self, request: Request) -> Response:
        return self._json(lambda memory: pages.conversations(memory, request.query_params.get("q"), _page(request)))

    def api_conversation(self, request: Request) -> Response:
        return self._json(lambda memory: self._conversation(memory, request))

    def api_turn(self, request: Request) -> Response:
        return self._json(lambda memory: pages.turn(memory, request.path_params["turn_id"]))

    def api_context(self, request: Request) -> Response:
        """`cuemem ask --context-only --json` for ?q=QUESTION&c=CONVERSATION (c empty or absent: all)."""
        return self._json(lambda memory: pages.question(memory, _question(request), _chosen(request) or None,
                                                        self.model, answer=False)["context"])

    def api_ask(self, request: Request) -> Response:
        """`cuemem ask --json`: the same, with the answer (the configured model's, else the offline one)."""
        def build(memory: Memory) -> dict[str, Any]:
            result = pages.question(memory, _question(request), _chosen(request) or None, self.model,
                                    unlocked=self.readers.aside)
            return {**result["context"], **({"error": result["error"]} if result["error"] else {})}

        return self._json(build)

    # ---------------------------------------------------------------- helpers
    def _conversation(self, memory: Memory, request: Request) -> dict[str, Any]:
        name = request.query_params.get("name")
        if not name:
            raise BadRequest("which conversation? ?name=NAME is missing")
        return pages.conversation(memory, name, _page(request), _int(request, "at"))

    def _read(self, build: Build) -> tuple[dict[str, Any] | None, CuememError | None, int]:
        try:
            with self.readers.memory() as memory:
                return build(memory), None, 200
        except pages.NotFound as exc:
            return None, exc, 404
        except CuememError as exc:  # a malformed parameter, or what the CLI would explain with exit code 1
            return None, exc, 400

    def _html(self, request: Request, template: str, build: Build) -> Response:
        data, error, status = self._read(build)
        root = request.scope.get("root_path", "")

        def url(path: str = "", **params: Any) -> str:
            query = urlencode({k: v for k, v in params.items() if v is not None})
            return f"{root}/{path}" + (f"?{query}" if query else "")

        common = {"url": url, "db": self.db_shown, "search": None}  # the search box's text: the list's own
        if error is not None:
            page = self.templates.get_template("error.html").render(error=error, status=status, **common)
        else:
            page = self.templates.get_template(template).render({**common, **(data or {})})
        return HTMLResponse(page, status)

    def _json(self, build: Build) -> Response:
        data, error, status = self._read(build)
        if error is not None:
            data = {"error": error.message, "hint": form_hint(error)}
        else:
            data = {k: v for k, v in (data or {}).items() if k != "picture"}
        return Response(orjson.dumps(data), status, media_type="application/json")


def create_app(memory: Memory, model: str | None, token: str, port: int, db_shown: str) -> ASGIApp:
    """The whole app: `Guard` around the pages of `Browser`."""
    return Guard(Starlette(routes=Browser(memory, model, db_shown).routes()), token, port)


def _int(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()):
        raise BadRequest(f"?{name}= takes a whole number ≥ 0, not {value!r}")
    return int(value)


def _page(request: Request) -> int:
    return _int(request, "page") or 0


def _chosen(request: Request) -> str | None:
    """The question's conversation: ?c=NAME; ?c= (empty) is every conversation; absent is the default."""
    return request.query_params.get("c")


def _question(request: Request) -> str:
    text = (request.query_params.get("q") or "").strip()
    if not text:
        raise BadRequest("which question? ?q=QUESTION is missing")
    return text


def _when(iso: str | None) -> str:
    if not iso:
        return ""
    try:
        return format_human(iso)
    except ValueError:
        return iso


def _highlight(text: str, words: list[str]) -> Markup:
    """`text`, escaped, with each word that starts with one of `words` marked."""
    if not words:
        return escape(text)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\w*", re.I)
    out, last = [], 0
    for match in pattern.finditer(text):
        out += [escape(text[last:match.start()]), Markup("<mark>"), escape(match.group()), Markup("</mark>")]
        last = match.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


# A turn's markdown, safely: raw HTML in the text is escaped, not passed on (`html` off), and nothing becomes a
# link or an image (those rules are off, reference definitions too), so stored text never sets a link target
# or loads anything; a line break is a break, as in a chat.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"]).disable(
    ["link", "image", "autolink", "html_inline", "html_block", "reference"])


def markdown(text: str) -> Markup:
    """A turn's text as the HTML of its markdown (lists, code blocks, emphasis, tables): what markdown-it
    renders, from text it escaped itself."""
    return Markup(_MARKDOWN.render(text))
