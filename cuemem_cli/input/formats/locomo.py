"""LoCoMo (`locomo10.json`): one conversation per sample, turns keep their `dia_id`.

Every turn of a session gets the session's date-time. Image turns have their BLIP
caption appended as `text + " [shares a photo: CAPTION]"` so the photo stays
searchable. Sessions are the `session_N` lists in numeric order; `session_N_date_time`
keys without a session (conv-26 has some) are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ...records import Message
from ...text import is_blank
from .base import Options, expect_list, shape_error, time_in


SESSION = re.compile(r"session_(\d+)")


def convert(data: Any, options: Options) -> Iterator[Message]:
    """The messages of a loaded LoCoMo file, sample by sample, session by session."""
    samples = expect_list("locomo", "top level", data, "a list of samples")
    for index, sample in enumerate(samples):
        where = f"sample {index}"
        if not isinstance(sample, dict) or "sample_id" not in sample:
            raise shape_error("locomo", where, "expected an object with 'sample_id' and 'conversation'")
        conversation_id = str(sample["sample_id"])
        conversation = sample.get("conversation")
        if not isinstance(conversation, dict):
            raise shape_error("locomo", conversation_id, "'conversation' must be an object")
        numbers = sorted(int(m[1]) for key in conversation if (m := SESSION.fullmatch(key)))
        for number in numbers:
            session_where = f"{conversation_id} session {number}"
            turns = expect_list("locomo", session_where, conversation[f"session_{number}"], "a list of turns")
            raw_time = conversation.get(f"session_{number}_date_time")
            time = time_in("locomo", session_where, raw_time) if raw_time is not None else None
            for turn in turns:
                if not isinstance(turn, dict) or "dia_id" not in turn:
                    raise shape_error("locomo", session_where, "expected turns with 'dia_id', 'speaker' and 'text'")
                text = str(turn.get("text") or "")
                caption = turn.get("blip_caption")
                if caption:
                    text = f"{text} [shares a photo: {caption}]".lstrip()
                if is_blank(text):
                    continue
                yield Message(
                    conversation=conversation_id,
                    text=text,
                    source_id=str(turn["dia_id"]),
                    session=str(number),
                    time=time,
                    speaker=turn.get("speaker"),
                )
