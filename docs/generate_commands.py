"""Write docs/commands.md from the CLI's own help, so the reference cannot drift from the code.

    python docs/generate_commands.py          # rewrite docs/commands.md
    python docs/generate_commands.py --check  # exit 1 when the page differs from the CLI

tests/test_docs.py runs the check, so a changed option without a regenerated page fails CI.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "commands.md"
WIDTH = 100
HEADER = """# Command reference

Generated from `cuemem --help` and each command's `--help` by `python docs/generate_commands.py`;
`tests/test_docs.py` fails when this page and the CLI differ. Global option: `--db PATH` (or `$CUEMEM_DB`)
goes before the command, e.g. `cuemem --db chat.db ask "..."`.
"""


def _walk(command, ctx):
    """(context, command) for the app and every command and sub-command, in help order."""
    yield ctx, command
    if hasattr(command, "list_commands"):  # a group (Typer vendors click: no isinstance check)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            yield from _walk(sub, sub.context_class(sub, info_name=name, parent=ctx, terminal_width=WIDTH,
                                                    max_content_width=WIDTH))


def render() -> str:
    os.environ.setdefault("_TYPER_FORCE_DISABLE_TERMINAL", "1")
    import typer.main

    from cuemem_cli.cli.app import app

    root = typer.main.get_command(app)
    top = root.context_class(root, info_name="cuemem", terminal_width=WIDTH, max_content_width=WIDTH,
                             **root.context_settings)  # as the app makes it: -h beside --help
    parts = [HEADER]
    for ctx, command in _walk(root, top):
        parts.append(f"## `{ctx.command_path}`\n\n```\n{command.get_help(ctx).rstrip()}\n```\n")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} differs from the CLI's help: run python docs/generate_commands.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
