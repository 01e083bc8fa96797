"""`cuemem mcp`: one memory (a SQLite file or a PostgreSQL database) served to agents as Model Context
Protocol tools over stdio.

`MemoryTools` holds what each tool does, in plain synchronous code on a `Memory` (no MCP import, so
programs and tests can call it directly); `build_server` wraps it in the official SDK's `MCPServer`.

Every tool runs on one worker thread that owns the database connection and the models: a process
serves one call at a time (SQLite admits one writer anyway), the embedder and the extractor load on
the first call that needs them and stay loaded, and the event loop keeps reading requests
meanwhile. Several server processes (two agents, two editor windows) may share one database: each
write takes SQLite's write lock (`Store.transaction`, BEGIN IMMEDIATE with a busy timeout) and the
ingest pipeline re-reads under it what other processes committed, so no process loses another's
turns. stdout is the protocol: the SDK points file descriptor 1 at stderr while it serves, and logs
go to stderr.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .config import DEFAULT_BUDGET
from .errors import CuememError, UnknownConversation
from .ingest.pipeline import Ingestor, IngestReport
from .input.jsonl import checked_messages
from .memory import Memory, Result
from .recall.changes import change_notes
from .recall.evidence import evidence_lines
from .recall.scope import conversation_labels
from .recall.settings import Settings
from .records import Context, chat_label
from .store.base import maintenance, now_iso
from .text import plural

SERVER_NAME = "cuemem"
INSTRUCTIONS = (
    "Long-term memory of conversations. Store turns with `remember` (one conversation name per chat, e.g. "
    "the project or the session), find what was said with `recall` (evidence turns from every conversation, "
    "oldest first, each with its conversation, id, time and speaker; `conversations` narrows it), list what "
    "is stored with `list_conversations`."
)

T = TypeVar("T")
# Turns that recall and ask used are recorded (forget's decay and LRU policies keep used turns) at most
# this often: each write would drop the conversation view that makes a warm recall cost a few ms
# (recall/view.py), so the marks wait in memory until then, until this process next writes, or until it stops.
USED_FLUSH_SECONDS = 60.0


class MessageIn(BaseModel):
    """One turn to remember; any further field is kept with the turn, as `cuemem ingest` keeps it."""

    model_config = ConfigDict(extra="allow")

    text: str = Field(description="What was said.")
    speaker: str | None = Field(None, description="Who said it (a name).")
    role: str | None = Field(None, description="user, assistant, …")
    time: str | int | float | None = Field(
        None, description="When: ISO 8601 (a zone is converted to UTC), a date like '8 May 2023', or epoch seconds.")
    id: str | int | None = Field(
        None, description="A stable id of the turn in its source; remembering it again is then a no-op.")
    session: str | None = Field(None, description="A session within the conversation (a day, a chat window).")


@dataclass(frozen=True)
class Reply:
    """A tool's result in two forms: `text` for the agent's model (MCP clients hand their model a result's
    text), `data` for programs (the structured content)."""

    text: str
    data: dict[str, Any]


class MemoryTools:
    """The tools' behaviour on one database; each method returns JSON-ready data or a Reply, or raises
    CuememError."""

    def __init__(self, path: str | os.PathLike[str] | None = None, model: str | None = None,
                 extractor: str = "spacy", extract_model: str | None = None, embedder: str | None = None):
        """`path`: a SQLite file or a `postgresql://` URL, resolved as by every interface (Memory; None:
        $CUEMEM_DB, else the per-user default). `model`: the litellm model `ask` answers with when the call
        names none (None: offline)."""
        self.model = model
        self.memory = Memory(path, embedder=embedder, extractor=extractor, extract_model=extract_model,
                             create=True)
        self._writer: Ingestor | None = None  # kept between remember calls (Memory.writer)
        self._used: dict[str, dict[str, str]] = {}  # conversation → source id → when it was last used
        self._flushed = time.monotonic()

    def close(self) -> None:
        try:
            self.flush_used()
        finally:
            self.memory.close()

    def _exists(self) -> bool:
        """Reading tools never create the memory: only `remember` does (as only `ingest` does on the CLI)."""
        return self.memory.exists()

    # ------------------------------------------------------------------ tools
    def remember(self, conversation: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """Store turns as `cuemem ingest` does (cues, vectors, edges). Every message is checked first: one
        bad message rejects the call and nothing is stored."""
        conversation = _name(conversation)
        if not messages:
            raise CuememError("messages is empty: nothing to remember", "pass a list of {text, speaker?, time?, id?}")
        parsed = checked_messages(messages, conversation)  # one bad message rejects the call
        self.flush_used()
        if self._writer is None:
            self._writer = self.memory.writer()
        try:
            report = self._writer.run(parsed, IngestReport(lines=len(parsed)))
        except BaseException:
            self._writer = None  # its positions and indexes may be ahead of what was committed
            raise
        result: dict[str, Any] = {
            "conversation": conversation,
            "messages": len(parsed),
            "turns_added": report.turns_added,
            "turns_existing": report.turns_existing,
            "conflicts": report.conflicts,
            "cues": report.cues,
            "temporal_edges": report.temporal_edges,
            "semantic_edges": report.semantic_edges,
            "pending": report.pending,
        }
        if report.conflicts:
            result["conflict_ids"] = report.conflict_ids
            result["note"] = ("some ids are stored already with another text; those messages were not stored "
                              "(the stored turns are kept): give new ids, or forget the old turns first")
        return result

    def recall(self, question: str, conversations: list[str] | None = None, budget: int = DEFAULT_BUDGET,
               as_of: str | None = None) -> Reply:
        """The evidence `cuemem ask --context-only` gives, from every conversation or those named, as text
        (`recall_text`) and as `ask --context-only --json`'s object; its turns count as used (forget's decay
        and LRU policies), as after an `ask`."""
        context = self._context(question, conversations, Settings(budget=budget), as_of)
        self._note_used(context)
        return Reply(recall_text(context), context.to_json())

    def ask(self, question: str, conversations: list[str] | None = None, model: str | None = None) -> Reply:
        """An answer from `model`, else the server's model; with neither, cuemem's offline extractive
        answer (the evidence sentences nearest the question) and a note saying no model is configured.
        As text (`answer_text`) and as `ask --json`'s object."""
        question = _text(question, "question")
        chosen = model or self.model
        self._require()
        result = self.memory.ask(question, _names(conversations), Settings(), model=chosen, record_retrieval=False)
        self._note_used(result.context)
        data = result.to_json()
        if chosen is None:
            data["note"] = ("no answer model is configured (start the server with --model MODEL or set "
                            "CUEMEM_MODEL, or pass model): this is cuemem's offline answer, read off the evidence "
                            "without a model. Its first line is the answer when answer_form is \"answer\"; when it "
                            "is \"quote\", it is the evidence sentence that answers best, quoted with who said it "
                            "and when; read the evidence yourself")
        return Reply(answer_text(result, data.get("note")), data)

    def list_conversations(self) -> list[dict[str, Any]]:
        if not self._exists():
            return []
        keys = ("conversation", "title", "turns", "cues", "pending_turns", "first_time", "last_time")
        return [{key: row[key] for key in keys} for row in maintenance(self.memory.store).conversation_stats()]

    def forget(self, conversation: str, turn_ids: list[str] | None = None) -> dict[str, Any]:
        """The turns (their cues, vectors and edges with them), or the whole conversation without `turn_ids`."""
        conversation = _name(conversation)
        if turn_ids is not None and not turn_ids:
            raise CuememError("turn_ids is empty: nothing to forget",
                              "name the turns' ids, or leave turn_ids out to forget the whole conversation")
        store = self._require()
        if store.conversation_id(conversation) is None:
            raise UnknownConversation(conversation, conversation_labels(store))
        missing: list[str] = []
        if turn_ids:
            cid = store.conversation_id(conversation)
            stored = store.stored_texts(cid, turn_ids) if cid is not None else {}
            missing = [tid for tid in turn_ids if tid not in stored]
        self.flush_used()
        self._writer = None  # its cue indexes may hold forgotten cues
        report = self.memory.forget(conversation, turns=turn_ids or ()).to_json()
        report["not_found"] = missing
        return report

    def flush_used(self) -> None:
        """Record the turns used since the last flush, each with the time of its latest use (Memory.record_used:
        where the memory cannot take the write, the marks are dropped and that is logged once)."""
        used, self._used = self._used, {}
        self._flushed = time.monotonic()
        if used:
            self.memory.record_used(used)

    # --------------------------------------------------------------- helpers
    def _note_used(self, context: Context) -> None:
        now = now_iso()
        for e in context.evidence:
            self._used.setdefault(e.conversation, {})[e.source_id] = now
        if time.monotonic() - self._flushed >= USED_FLUSH_SECONDS:
            try:
                self.flush_used()
            except CuememError as exc:  # another storage fault (an I/O error): the answer stands, these marks are lost
                logging.getLogger(__name__).warning("could not record used turns: %s", exc.message)

    def _require(self):
        """The store, once something was remembered (reading tools never create the file)."""
        if not self._exists():
            raise CuememError("this memory is empty", "remember something first")
        return self.memory.store

    def _context(self, question: str, conversations: list[str] | None, settings: Settings,
                 as_of: str | None) -> Context:
        question = _text(question, "question")
        self._require()
        return self.memory.context(question, _names(conversations), settings, as_of)


def _text(value: str, what: str) -> str:
    if not value.strip():
        raise CuememError(f"{what} is empty")
    return value


def _name(conversation: str) -> str:
    return _text(conversation, "conversation")


def _names(conversations: list[str] | str | None) -> list[str] | None:
    """The conversations a question is narrowed to (names or titles); None or [] for the whole memory
    (one name alone is taken as a list of one, not as its letters)."""
    if isinstance(conversations, str):
        conversations = [conversations]
    return [_name(c) for c in conversations] if conversations else None


def recall_text(context: Context) -> str:
    """What an agent's model reads of a recall (MCP clients hand their model a result's text): the evidence
    as cuemem's answer model reads it (recall/evidence.py's `evidence_lines`: a header per chat and day,
    `speaker: text`, relative dates resolved), each turn followed by what of it later changed ("(later
    changed: Portland → Denver (s3:6, 22 July 2023))": recall/changes.py), under one line saying where it
    comes from. The fields of
    every turn (ids, scores, how it came in) are in the structured content, for programs: as JSON text
    they cost an agent about five times the evidence itself."""
    evidence = context.evidence
    if not evidence:
        return "Nothing in memory matches this question."
    chats = {ev.conversation: chat_label(ev) for ev in evidence}
    where = next(iter(chats.values())) if len(chats) == 1 else f"{len(chats)} conversations"
    head = f"Evidence from {where}, oldest first ({plural(len(evidence), 'turn')}):"
    return "\n".join([head, *evidence_lines(evidence, notes=change_notes)])


def answer_text(result: Result, note: str | None) -> str:
    """What an agent's model reads of an answer: the answer (or that there is none), the note, the evidence."""
    answer = result.answer
    if answer.kind == "llm":
        said = f"Answer ({answer.model}): {answer.text or 'none'}"
    elif answer.text is None:
        said = "Offline answer (extractive): none: no evidence answers it"
    else:  # the answer line opened by what it is, as the CLI prints it
        said = f"Offline answer (extractive), {answer.labelled()}"
    return "\n\n".join(part for part in (said, note and f"Note: {note}", recall_text(result.context)) if part)


def _result(reply: Reply) -> Any:
    """A tool result whose text (what a client hands its model) is the reply's text and whose structured
    content (for programs) is its data. The SDK passes a CallToolResult through as it is, checking the data
    against the tool's declared output (a JSON object), so the tool keeps its output schema."""
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=reply.text)], structured_content=reply.data)


# ------------------------------------------------------------------ server
# The tools' parameters are annotations, evaluated at module level (this module postpones them): the
# description of `conversations`, shared by recall and ask, lives here rather than in build_server.
NARROWING = ("Search only these conversations (names, titles, or the start of one naming one chat: see "
             "list_conversations); "
             "leave out to search every conversation in memory.")


# Each tool's words for what an error's hint is about (CuememError.fields): its parameters, where the command
# line has flags. A field a tool has no parameter for adds nothing to the hint, which is in the library's words.
PARAMETERS: dict[str, dict[str, str]] = {
    "remember": {"conversation": "conversation"},
    "recall": {"conversation": "conversations", "budget": "budget", "as_of": "as_of"},
    "ask": {"conversation": "conversations", "model": "model"},
    "forget": {"conversation": "conversation", "turns": "turn_ids"},
}


def tool_hint(tool: str, exc: CuememError) -> str | None:
    """`exc`'s hint as `tool`'s caller reads it: "choose one by its name or title: the conversations argument"."""
    names = {field: f"the {parameter} argument" for field, parameter in PARAMETERS.get(tool, {}).items()}
    return exc.hint_in({"add": "the remember tool", **names})


def build_server(tools: MemoryTools, worker: ThreadPoolExecutor, allow_forget: bool = False):
    """The MCP server: each tool runs `tools`' method on `worker` (one thread); a CuememError becomes a
    tool error (the model reads its message and hint) and leaves the server running."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    async def run(method: Callable[..., T], *args: Any) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(worker, functools.partial(method, *args))
        except CuememError as exc:
            hint = tool_hint(method.__name__, exc)
            raise ToolError(f"{exc.message} (hint: {hint})" if hint else exc.message) from None

    server = _server_class()(SERVER_NAME, instructions=INSTRUCTIONS)
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    async def remember(
        conversation: Annotated[str, Field(description="The conversation to store the turns in (created if new).")],
        messages: Annotated[list[MessageIn], Field(description="The turns, oldest first.")],
    ) -> dict[str, Any]:
        """Store dialogue turns in long-term memory, with their cues, vectors and graph edges. Turns with an
        `id` already stored are skipped, so remembering again is safe. Returns counts."""
        items = [m.model_dump(exclude_none=True) for m in messages]
        return await run(tools.remember, conversation, items)

    @server.tool(annotations=reading)
    async def recall(
        question: Annotated[str, Field(description="What to look for, as a question or keywords.")],
        conversations: Annotated[list[str] | None, Field(description=NARROWING)] = None,
        budget: Annotated[int, Field(ge=50, description="Evidence budget in tokens (about characters / 4).")]
        = DEFAULT_BUDGET,
        as_of: Annotated[str | None, Field(description="Recall as of this time: later turns are left out.")] = None,
    ) -> dict[str, Any]:
        """The turns of memory that bear on a question, from every conversation (or those named), in the
        order they were said, within a token budget, as a transcript: a header per chat and day, then
        `speaker: text`. Use it before answering from memory. The structured content has each turn's
        fields (conversation, title, source_id, time, speaker, text, via, score)."""
        return _result(await run(tools.recall, question, conversations, budget, as_of))

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=True))
    async def ask(
        question: Annotated[str, Field(description="The question.")],
        conversations: Annotated[list[str] | None, Field(description=NARROWING)] = None,
        model: Annotated[str | None, Field(description="A litellm model name; default: the server's.")] = None,
    ) -> dict[str, Any]:
        """Answer a question from memory with the configured model, with the evidence it used. Without a
        configured model the answer is extractive and a note says so: prefer recall then."""
        return _result(await run(tools.ask, question, conversations, model))

    @server.tool(annotations=reading)
    async def list_conversations() -> list[dict[str, Any]]:
        """The conversations in memory: name, title, turns, cues, pending_turns, first and last turn time."""
        return await run(tools.list_conversations)

    if allow_forget:
        @server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False))
        async def forget(
            conversation: Annotated[str, Field(description="The conversation.")],
            turn_ids: Annotated[list[str] | None, Field(
                description="Ids (source_id) of the turns to forget; leave out to forget the whole conversation.")]
            = None,
        ) -> dict[str, Any]:
            """Delete turns for good, with their cues, vectors and edges (no undo). Returns what was removed
            and the ids not found."""
            return await run(tools.forget, conversation, turn_ids)

    return server


def _server_class():
    """The SDK's MCPServer, with arguments that fail the tools' schema said as `field: problem` pairs. The
    SDK passes pydantic's own text on, which is written for Python programmers and ends each problem with
    a pydantic.dev URL (`For further information visit https://errors.pydantic.dev/…`)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(argument_errors(name, exc.__cause__)) from exc.__cause__
                raise

    return Server


def argument_errors(tool: str, error: Any) -> str:
    """`Error executing tool recall: invalid arguments: budget: Input should be greater than or equal to 50; …`
    (the SDK's prefix, as on every tool error) from a pydantic ValidationError: where, and what is wrong,
    without pydantic's type codes and URLs."""
    problems = [f"{'.'.join(str(part) for part in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()]
    return f"Error executing tool {tool}: invalid arguments: {'; '.join(problems)}"


def serve(path: str | os.PathLike[str] | None, allow_forget: bool = False, model: str | None = None,
          extractor: str = "spacy", extract_model: str | None = None) -> None:
    """Serve until the client closes stdin; the database is closed on the worker thread that opened it."""
    tools = MemoryTools(path, model=model, extractor=extractor, extract_model=extract_model)
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cuemem")
    try:
        build_server(tools, worker, allow_forget).run("stdio")
    finally:
        worker.submit(tools.close).result()
        worker.shutdown()
