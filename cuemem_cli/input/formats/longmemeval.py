"""LongMemEval: one conversation per question, holding that question's haystack.

Sessions are ordered by (time, original index): the data is sorted by day but not
always by time within a day. Turn ids are `SESSION_ID:INDEX` (0-based index within
the session, counted before skipping empty turns so ids match the source).
`has_answer` is kept in `extra` when present.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...records import Message
from ...text import is_blank
from .base import Options, expect_list, shape_error, time_in


def convert(data: Any, options: Options) -> Iterator[Message]:
    """The messages of a loaded LongMemEval file, question by question."""
    questions = expect_list("longmemeval", "top level", data, "a list of questions")
    for index, question in enumerate(questions):
        if not isinstance(question, dict) or "question_id" not in question:
            raise shape_error("longmemeval", f"question {index}", "expected an object with 'question_id'")
        conversation_id = str(question["question_id"])
        ids, dates, sessions = (
            expect_list("longmemeval", conversation_id, question.get(key), f"a list in {key!r}")
            for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions")
        )
        if not len(ids) == len(dates) == len(sessions):
            problem = "haystack_session_ids, haystack_dates and haystack_sessions differ in length"
            raise shape_error("longmemeval", conversation_id, problem)
        times = [time_in("longmemeval", f"{conversation_id} session {sid}", date)
                 for sid, date in zip(ids, dates, strict=True)]
        for position in sorted(range(len(ids)), key=lambda i: (times[i], i)):
            session_id = str(ids[position])
            where = f"{conversation_id} session {session_id}"
            turns = expect_list("longmemeval", where, sessions[position], "a list of messages")
            for turn_index, turn in enumerate(turns):
                if not isinstance(turn, dict) or "role" not in turn:
                    raise shape_error("longmemeval", where, "expected messages with 'role' and 'content'")
                text = turn.get("content")
                if not isinstance(text, str) or is_blank(text):
                    continue
                extra = {"has_answer": turn["has_answer"]} if "has_answer" in turn else {}
                yield Message(
                    conversation=conversation_id,
                    text=text,
                    source_id=f"{session_id}:{turn_index}",
                    session=session_id,
                    time=times[position],
                    speaker=turn["role"],
                    role=turn["role"],
                    extra=extra,
                )
