"""How cuemem's help reads, and its shell completion.

Typer (0.29) writes a required argument as `{question}` in usage lines and every value as its Python type
(`<str>`, `<list[str]>`, `<int range>`). `tidy` gives the whole command tree the usage lines people write
(`cuemem ask [OPTIONS] QUESTION`, `cuemem ingest [OPTIONS] FILE...`) and metavars by kind (TEXT, INTEGER,
NUMBER, PATH) wherever a command names none of its own. It walks the built tree, so a command added later
gets the same help without remembering to.

Typer's completion reads `_CUEMEM_COMPLETE=source_bash`, Click's documented form is `bash_source`: both
are accepted (`completion_instruction`).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, get_args, get_origin

from typer.core import TyperArgument, TyperOption

_TYPE_METAVARS = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "PATH"}
_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


class _Argument(TyperArgument):
    """An argument as usage lines write it: QUESTION, FILE..., [FILE] when optional; no type after it."""

    def _usage_display_name(self) -> str:
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"

    def _rich_display_name(self) -> str:
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


def tidy(command: Any) -> None:
    """Usage lines and metavars of `command` and every command below it, in place."""
    for param in command.params:
        if isinstance(param, TyperArgument):
            param.__class__ = _Argument  # the same object, with the usage methods above
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
        elif isinstance(param, TyperOption) and param.metavar is None and not param.is_flag:
            param.metavar = _metavar(param.type_descriptor.annotation)
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)


def _metavar(annotation: Any) -> str:
    if get_origin(annotation) is list:  # a repeatable option: one value per use
        annotation = get_args(annotation)[0]
    return _TYPE_METAVARS.get(annotation, getattr(annotation, "__name__", "VALUE").upper())


def completion_instruction(environ: MutableMapping[str, str], prog_name: str, complete_var: str | None) -> None:
    """Click's `SHELL_source` / `SHELL_complete` in the completion variable, rewritten to Typer's
    `source_SHELL` / `complete_SHELL`, which is what Typer reads."""
    var = complete_var or f"_{prog_name}_COMPLETE".replace("-", "_").upper()
    shell, _, instruction = environ.get(var, "").partition("_")
    if shell in _SHELLS and instruction in ("source", "complete"):
        environ[var] = f"{instruction}_{shell}"

