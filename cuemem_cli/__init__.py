"""cuemem: cue-guided long-term memory for conversations (the CueMem method) over one SQLite file."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Memory", "__version__"]


def __getattr__(name: str):
    """`from cuemem_cli import Memory` without importing the engine for `cuemem --help`."""
    if name == "Memory":
        from .memory import Memory

        return Memory
    raise AttributeError(name)
