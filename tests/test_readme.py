"""The README's examples run as written: the Python API, and the Quick start's cuemem commands."""

from __future__ import annotations

import re

import pytest

from conftest import REPO


def test_python_api_example_runs(tmp_path, monkeypatch, capsys, stub_models):
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("['h:")  # the example's messages carry no ids: identity is a content hash
    promised = re.search(r"# prints: (.+)", code).group(1)  # the answer the example says it prints
    assert out[1] == promised == "extractive Denver"  # the newer turn wins: "I moved to Denver yesterday!"
    assert (tmp_path / "demo.db").exists()


@pytest.mark.slow  # real spaCy and MiniLM
def test_quick_start_asks_a_memory_of_both_samples_without_naming_one(cli, tmp_path, monkeypatch):
    """The Quick start's cuemem commands, as written, from a folder holding the samples: the question is
    asked with no conversation named, of a memory of several, and finds its answer."""
    import shlex
    import shutil

    import orjson

    readme = (REPO / "README.md").read_text()
    line = re.search(r"```bash\n(.*?)\n```", readme.split("## Quick start", 1)[1], re.S).group(1)
    commands = [shlex.split(part) for part in line.split(" && ") if part.startswith("cuemem ")]
    assert [c[3] for c in commands] == ["ingest", "ingest", "ask"] and "-c" not in commands[-1]
    shutil.copytree(REPO / "sample_dialogues", tmp_path / "sample_dialogues")
    monkeypatch.chdir(tmp_path)
    stored = []
    for command in commands[:2]:
        ingested = cli(*command[1:], "--json")
        assert ingested.exit_code == 0, ingested.stderr
        stored += orjson.loads(ingested.stdout)["conversations"]
    assert sorted(stored) == ["assistant-chat", "maya-and-leo"]
    asked = cli(*commands[-1][1:], "--json")
    assert asked.exit_code == 0, asked.stderr
    data = orjson.loads(asked.stdout)
    assert data["conversations"] == [] and "beagle" in data["answer"].lower()
