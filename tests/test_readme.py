"""The README's Python API example runs as written."""

from __future__ import annotations

import re

from conftest import REPO


def test_python_api_example_runs(tmp_path, monkeypatch, capsys, stub_models):
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("['h:")  # the example's messages carry no ids: identity is a content hash
    assert out[1].startswith("extractive ")
    assert (tmp_path / "demo.db").exists()
