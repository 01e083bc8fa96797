"""`.ci/run` runs exactly the README's test command, so what CI checks is what the README tells people."""

from __future__ import annotations

import re

from conftest import REPO


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", readme.split("## Quick start", 1)[1], re.S)
    test_command = next(b.strip() for b in blocks if "pytest" in b)
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                if line and not line.startswith(("#", "set ", "cd "))]
    assert ci_lines == [test_command]
    assert "pip wheel" in test_command and "python -P -m pytest" in test_command
