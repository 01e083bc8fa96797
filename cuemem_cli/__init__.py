"""cuemem: cue-guided long-term memory for conversations (the CueMem method) in one SQLite file, or in
PostgreSQL + pgvector (docs/postgres.md).

    from cuemem_cli import Memory, Settings
    result = Memory("chat.db").ask("Where does Maya live?", settings=Settings(budget=1000))
    result.context  # a Context: the question, the matched cues and the Evidence turns, in order
    result.answer   # an Answer: its text and kind (llm or extractive)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import defaults  # noqa: F401  (registers the built-in extractors, embedders and answerers)

__version__ = "0.1.0"
__all__ = ["Answer", "Context", "Evidence", "Memory", "Result", "Settings", "__version__"]

if TYPE_CHECKING:
    from .memory import Memory, Result
    from .recall.settings import Settings
    from .records import Answer, Context, Evidence

# Where each public name lives; imported on first use so that `cuemem --help` loads none of the engine.
_EXPORTS = {"Memory": "memory", "Result": "memory", "Settings": "recall.settings",
            "Answer": "records", "Context": "records", "Evidence": "records"}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cuemem_cli' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
