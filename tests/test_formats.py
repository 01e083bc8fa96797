"""The input formats' one index (`cuemem_cli.input.formats.FORMATS`) is where the CLI's formats come from: every
entry is a `cuemem convert` command with its help, an `ingest --from` value and a section of docs/input-formats.md,
and every format module is an entry; and a call's messages are checked in one place, with one error."""

from __future__ import annotations

import re

import pytest

from cuemem_cli.input.formats import FORMATS
from conftest import REPO

FORMATS_FOLDER = REPO / "cuemem_cli" / "input" / "formats"


def _words(text: str) -> str:
    return " ".join(text.split())


def _convert_group():
    from typer.main import get_command

    from cuemem_cli.cli.app import app

    root = get_command(app)
    return root.get_command(root.context_class(root, info_name="cuemem"), "convert")


def test_the_convert_commands_are_the_index_in_its_order():
    assert list(_convert_group().commands) == list(FORMATS)


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_convert_command_says_what_its_entry_says(cli, name):
    fmt = FORMATS[name]
    result = cli("convert", name, "--help")
    assert result.exit_code == 0, result.stderr
    shown = _words(result.stdout)
    assert shown.startswith(f"Usage: cuemem convert {name} [OPTIONS] FILE...")
    unwrapped = re.sub(r"\s", "", result.stdout)  # help wraps lines, at spaces and hyphens
    assert re.sub(r"\s", "", fmt.summary) in unwrapped and re.sub(r"\s", "", fmt.files) in unwrapped
    assert ("--all-branches" in shown) == fmt.branches


def test_every_format_module_is_an_entry_of_the_index_and_converts():
    modules = sorted(p.stem for p in FORMATS_FOLDER.glob("*.py") if p.stem not in ("__init__", "base"))
    assert modules == sorted(fmt.module.rsplit(".", 1)[1] for fmt in FORMATS.values())
    for fmt in FORMATS.values():
        assert list(fmt.convert([])) == []  # its module's `convert`, imported by name


def test_ingest_from_takes_exactly_the_index_names(cli, tmp_path):
    said = _words(cli("ingest", "--help").stdout)
    assert f"(as `cuemem convert FORMAT`): {', '.join(FORMATS)}; jsonl is cuemem's own" in said
    empty = tmp_path / "empty.json"
    empty.write_text("[]\n")
    for name, fmt in FORMATS.items():
        taken = cli("--db", str(tmp_path / "x.db"), "ingest", "--from", name, str(empty))
        assert taken.exit_code == 1 and f"{empty}" in taken.stderr, (name, taken.stderr)  # read, not refused as usage
        branches = cli("--db", str(tmp_path / "x.db"), "ingest", "--from", name, "--all-branches", str(empty))
        assert (branches.exit_code == 2) == (not fmt.branches), (name, branches.stderr)
    unknown = cli("--db", str(tmp_path / "x.db"), "ingest", "--from", "whatsapp", str(empty))
    assert unknown.exit_code == 2
    assert f"'whatsapp' is not one of jsonl, {', '.join(FORMATS)}" in _words(unknown.stderr)
    assert not (tmp_path / "x.db").exists()


def test_every_format_has_its_section_in_the_formats_page():
    page = (REPO / "docs" / "input-formats.md").read_text(encoding="utf-8")
    sections = re.findall(r"^### `([\w-]+)`", page, re.M)
    assert sorted(sections) == sorted(FORMATS)
