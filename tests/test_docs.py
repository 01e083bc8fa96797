"""docs/commands.md is the CLI's own help: a changed command or option without a regenerated page fails."""

from __future__ import annotations

import importlib.util

from conftest import REPO


def _generator():
    spec = importlib.util.spec_from_file_location("generate_commands", REPO / "docs" / "generate_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_command_reference_matches_the_cli():
    generator = _generator()
    page = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    assert page == generator.render(), "docs/commands.md is stale: run python docs/generate_commands.py"


def test_command_reference_covers_every_command_and_option():
    from typer.main import get_command

    from cuemem_cli.cli import app

    page = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    root = get_command(app)
    ctx = root.context_class(root, info_name="cuemem")
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        assert f"## `cuemem {name}`" in page
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    assert opt in page, (name, opt)
