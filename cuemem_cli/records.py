"""Frozen records that cross module boundaries; their field names are the JSON contract."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Message:
    """One validated input line: a dialogue turn before it is stored.

    `time` is an ISO 8601 string (naive local time, as written in the source) or None.
    `extra` keeps fields the source had beyond ours (e.g. LongMemEval's `has_answer`).
    """

    conversation: str
    text: str
    source_id: str | None = None
    session: str | None = None
    time: str | None = None
    speaker: str | None = None
    role: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    line: int = 0  # 1-based line in the input, for error messages

    def to_json(self) -> dict[str, Any]:
        """The JSONL record `cuemem ingest` reads (what `convert` writes)."""
        out: dict[str, Any] = {"conversation": self.conversation}
        for key in ("session", "time", "speaker", "role"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out["text"] = self.text
        if self.source_id is not None:
            out["id"] = self.source_id
        out.update(self.extra)
        return out


def content_hash(message: Message) -> str:
    """Hash of what a cue extractor sees: speaker, time and text (the extraction cache key)."""
    payload = f"{message.speaker or ''}\x1f{message.time or ''}\x1f{message.text}"
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def source_id_of(message: Message) -> str:
    return message.source_id if message.source_id is not None else f"h:{content_hash(message)[:16]}"


@dataclass(frozen=True)
class Turn:
    """A stored turn. `position` is its chronological index within the conversation; `stored_at` when it was
    stored (an undated turn's place in time); `title` its conversation's title."""

    id: int
    conversation: str
    position: int
    source_id: str
    text: str
    session: str | None = None
    time: str | None = None
    speaker: str | None = None
    role: str | None = None
    stored_at: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Triple:
    """A cue as extracted, before it is stored: (subject, relation, object)."""

    subject: str
    relation: str
    object: str
    kind: str = "triple"  # triple | date | statement

    def text(self) -> str:
        """What gets embedded: the triple as a phrase, a statement as `speaker: sentence`."""
        if self.kind == "statement":
            return f"{self.subject}: {self.object}"
        return " ".join(part for part in (self.subject, self.relation, self.object) if part)


@dataclass(frozen=True)
class Cue:
    id: int
    turn_id: int
    subject: str
    relation: str
    object: str
    kind: str = "triple"


@dataclass(frozen=True)
class ScoredCue:
    subject: str
    relation: str
    object: str
    score: float
    turn: str  # source_id of the cue's turn
    kind: str = "triple"


@dataclass(frozen=True)
class Evidence:
    source_id: str
    time: str | None
    speaker: str | None
    text: str
    via: str  # anchor | lexical | temporal | semantic | kind
    session: str | None = None
    position: int = 0
    score: float = 0.0
    cue: str | None = None  # the matched cue, rendered, for anchors
    tokens: int = 0
    excerpt: bool = False  # text holds only the turn's sentences nearest the question ("…" marks gaps)
    conversation: str = ""  # the conversation it was said in (its name), and that conversation's title
    title: str | None = None
    role: str | None = None  # user | assistant | None: who said it in a chat with an assistant
    # Facts this turn states that a later turn changed (superseded_by: the later turn) or that it changes itself
    # (supersedes: the earlier turn): cues/changes.py, found at ingest
    superseded_by: tuple[ChangeLink, ...] = ()
    supersedes: tuple[ChangeLink, ...] = ()
    kinds: tuple[str, ...] = ()  # the kinds of things it names (cues/kinds.py), as the memory stored them


@dataclass(frozen=True)
class Change:
    """A fact that changed between two turns of one conversation, found at ingest (cues/changes.py): the older
    turn said `older_value` of (`subject`, `relation`), the newer one `newer_value`; `kind` "change", or
    "contradiction" when the newer says the older is not so. Both turns stay; this only links them."""

    conversation: str
    older: str  # the older turn's source id
    newer: str  # the newer turn's source id
    older_time: str | None
    newer_time: str | None
    subject: str
    relation: str
    older_value: str
    newer_value: str
    kind: str = "change"
    older_turn: int = 0  # the turns' ids in this database
    newer_turn: int = 0

    def link(self, from_older: bool) -> ChangeLink:
        """The change as the older turn's evidence shows it (the newer turn) or the newer's (the older one)."""
        source, time = (self.newer, self.newer_time) if from_older else (self.older, self.older_time)
        return ChangeLink(source, time, self.older_value, self.newer_value, self.kind, self.subject, self.relation)


@dataclass(frozen=True)
class ChangeLink:
    """One end of a `Change`, as the other turn's evidence names it: that turn's id and time, the values."""

    source_id: str
    time: str | None
    older_value: str
    newer_value: str
    kind: str
    subject: str
    relation: str


class Said(Protocol):
    """What places a turn in the evidence block: a stored `Turn`, or an `Evidence` item."""

    @property
    def conversation(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def time(self) -> str | None: ...
    @property
    def position(self) -> int: ...


def chat_label(said: Said) -> str:
    """What evidence headers call a turn's chat: its title, or its name when it has none."""
    return said.title or said.conversation


@dataclass(frozen=True)
class Context:
    """The evidence for a question. `conversations`: the conversations it was narrowed to, by name; empty
    when it ranged over the whole memory."""

    question: str
    conversations: tuple[str, ...]
    as_of: str | None
    cues: tuple[ScoredCue, ...]
    evidence: tuple[Evidence, ...]
    tokens: int
    timings_ms: dict[str, float]
    kinds: tuple[str, ...] = ()  # the kinds of thing the question asks for (cues/kinds.question_kinds), if any

    def to_json(self, answer: Answer | None = None) -> dict[str, Any]:
        """The one JSON shape of a context and its answer, whoever asks: `ask --json` (`--context-only`:
        no answer), MCP `recall`'s and `ask`'s structured content, the browse page's /api/context and
        /api/ask, `Result.to_json()` (docs/usage.md, "The JSON of a question"). The answer's fields are
        null (usage empty) when there is none, so a reader never has to ask whether a key exists."""
        data = asdict(self)
        return {
            "question": self.question,
            "conversations": list(self.conversations),
            "as_of": self.as_of,
            "kinds": list(self.kinds),
            "answer": answer.text if answer else None,
            "answer_kind": answer.kind if answer else None,
            "answer_form": answer.form if answer else None,
            "model": answer.model if answer else None,
            "usage": answer.usage if answer else {},
            "cues": list(data["cues"]),
            "evidence": [{**ev, "superseded_by": list(ev["superseded_by"]), "supersedes": list(ev["supersedes"]),
                          "kinds": list(ev["kinds"])} for ev in data["evidence"]],
            "tokens": self.tokens,
            "timings_ms": {**self.timings_ms, **({"answer": answer.timing_ms} if answer and answer.timing_ms else {})},
        }


@dataclass(frozen=True)
class Answer:
    """`text`: its first line is the answer line a person reads, then (offline) the turns it was read from.
    `form` says what that line is: "answer" (a model's, or the span the offline reader is sure of) or
    "quote" (the sentence that answers best, quoted with its speaker and day: the offline reader was not
    sure); None with no text (nothing in memory answers)."""

    text: str | None
    kind: str | None  # llm | extractive | None
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    timing_ms: float = 0.0
    form: str | None = None  # answer | quote | None

    def labelled(self) -> str | None:
        """The text as a person reads it offline: the answer line opened by what it is ("answer: beagle",
        "best match: Maya, 14 May 2023: \"…\""), the sources below unchanged. A model's answer is its own."""
        if self.text is None or self.kind != "extractive" or self.form not in FORM_LABELS:
            return self.text
        return f"{FORM_LABELS[self.form]}: {self.text}"


FORM_LABELS = {"answer": "answer", "quote": "best match"}  # what the text view calls each form of answer line

