"""Help reads as people write it (usage lines, metavars, -h, -V) and shell completion works (cli/help.py)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import PYTHON
from test_packaging import _script


def every_command():
    """(argv prefix, click command) of the app and every command and sub-command."""
    import typer.main

    from cuemem_cli.cli.app import app

    def walk(prefix, command):
        yield prefix, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk([*prefix, name], sub)

    yield from walk([], typer.main.get_command(app))


def test_usage_lines_and_metavars_read_as_people_write_them(cli):
    for prefix, command in every_command():
        result = cli(*prefix, "--help")
        assert result.exit_code == 0, (prefix, result.stderr)
        usage = result.stdout.splitlines()[0]
        assert usage.startswith("Usage: cuemem"), usage
        assert "{" not in usage and "}" not in usage, usage  # Typer 0.29 writes a required argument as {name}
        for typed in ("<str>", "<int", "<float", "<path>", "list[", "<bool>"):
            assert typed not in result.stdout, (prefix, typed)
        for param in command.params:
            if param.param_type_name == "argument":
                assert param.metavar and param.metavar.isupper(), (prefix, param.name)
    assert cli("ask", "--help").stdout.startswith("Usage: cuemem ask [OPTIONS] QUESTION\n")
    assert cli("ingest", "--help").stdout.startswith("Usage: cuemem ingest [OPTIONS] FILE...\n")
    assert cli("import", "--help").stdout.startswith("Usage: cuemem import [OPTIONS] FILE\n")
    assert cli("convert", "claude", "--help").stdout.startswith("Usage: cuemem convert claude [OPTIONS] FILE...\n")
    options = cli("ask", "--help").stdout
    assert re.search(r"-c, --conversation NAME\|TITLE +Search only this conversation", options)
    assert re.search(r"--top-m INTEGER +Cues retrieved", options)
    assert re.search(r"--evidence N\|all ", options)  # a metavar the command names itself is kept


def test_short_help_and_version(cli):
    assert cli("-h").stdout == cli("--help").stdout and "-h, --help" in cli("-h").stdout
    for prefix, _ in every_command():
        short = cli(*prefix, "-h")
        assert short.exit_code == 0 and short.stdout == cli(*prefix, "--help").stdout, prefix
    version = cli("-V")
    assert version.exit_code == 0 and re.fullmatch(r"cuemem \d+\.\d+\.\d+\S*\n", version.stdout)
    assert version.stdout == cli("--version").stdout


def test_ingest_help_does_not_tie_memory_to_sqlite(cli):
    text = " ".join(cli("ingest", "--help").stdout.split())
    assert "SQLite" not in text and "in the database (--db)" in text
    assert "in the order given" in text and "gzip and zip" in text


def _bash_completions(words: str, env: dict[str, str]) -> list[str]:
    """What bash completes for `words` once the script `_CUEMEM_COMPLETE=bash_source cuemem` printed is
    sourced, as a user's ~/.bashrc would."""
    script = _script()
    words_list = words.split(" ")
    command = (f'eval "$(_CUEMEM_COMPLETE=bash_source {script})"\n'
               f'COMP_WORDS=({" ".join(words_list)}); COMP_CWORD={len(words_list) - 1}\n'
               f'_cuemem_completion {script}\n'
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    done = subprocess.run(["bash", "--norc", "-c", command], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


@pytest.mark.subprocess  # the installed `cuemem` script, and bash
def test_bash_completion_from_the_documented_variable(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path)}
    source = subprocess.run([_script()], capture_output=True, text=True, timeout=60,
                            env={**env, "_CUEMEM_COMPLETE": "bash_source"})
    assert source.returncode == 0 and "not supported" not in source.stderr
    assert "complete -o default -F _cuemem_completion cuemem" in source.stdout
    assert _bash_completions("cuemem in", env) == ["ingest", "inspect-graph"]
    assert {"--conversation", "--context-only"} <= set(_bash_completions("cuemem ask --con", env))
    typer_style = subprocess.run([_script()], capture_output=True, text=True, timeout=60,
                                 env={**env, "_CUEMEM_COMPLETE": "source_bash"})
    assert typer_style.stdout == source.stdout  # Typer's own spelling works too


@pytest.mark.subprocess  # the installed `cuemem` script
def test_install_and_show_completion(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path)}
    shown = subprocess.run([_script(), "--show-completion", "bash"], capture_output=True, text=True, env=env,
                           timeout=60)
    assert shown.returncode == 0 and "_cuemem_completion" in shown.stdout
    installed = subprocess.run([_script(), "--install-completion", "bash"], capture_output=True, text=True, env=env,
                               timeout=60)
    assert installed.returncode == 0, installed.stderr
    script = tmp_path / ".bash_completions" / "cuemem.sh"
    assert "_cuemem_completion" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()


@pytest.mark.subprocess  # a fresh interpreter, whose imports are what is measured
@pytest.mark.parametrize("argv", [["--help"], ["ask", "--help"], ["-V"]])
def test_help_loads_no_heavy_library(argv):
    """`cuemem --help` stays under a second (STYLE.md) by importing none of the engine's libraries; the time
    itself is bench material, the imports are what a test can hold."""
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom cuemem_cli.cli.app import app\n"
            f"r = CliRunner().invoke(app, {argv!r})\nassert r.exit_code == 0, r.output\n"
            "heavy = sorted(m for m in ('litellm', 'spacy', 'onnxruntime', 'torch', 'numpy', 'pysqlite3', 'orjson',"
            " 'cuemem_cli.memory') if m in sys.modules)\nprint(','.join(heavy) or 'none')\n")
    out = subprocess.run([*PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "none"
