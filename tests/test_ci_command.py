"""`.ci/run` runs exactly the README's test command, so what CI checks is what the README tells people; before
it, and nowhere in the tests, it installs what the tests need beyond pip (the browser, WordNet)."""

from __future__ import annotations

import ast
import re
import subprocess

import pytest

from conftest import INSTALLS, REPO, SystemInstall

# calls that start a process: what a test could install software with
_STARTS = re.compile(r"^(subprocess\.(run|Popen|call|check_call|check_output|getoutput|getstatusoutput)"
                     r"|os\.(system|popen|exec\w*|spawn\w*|posix_spawnp?)|pexpect\.\w+|asyncio\.create_subprocess_\w+)$")


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", readme.split("## Quick start", 1)[1], re.S)
    test_command = next(b.strip() for b in blocks if "pytest" in b)
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                if line and not line.startswith(("#", "set ", "cd "))]
    assert ci_lines == ["bash .ci/browser-up >/dev/null", "bash .ci/wordnet-up >/dev/null", test_command]
    assert "pip wheel" in test_command and "python -P -m pytest" in test_command


def _started_commands(path) -> list[str]:
    """The text of every string in the arguments of each call in `path` that starts a process, joined per call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Call) and _STARTS.match(ast.unparse(node.func)):
            words = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            found.append(" ".join(words))
    return found


def test_no_test_installs_software_on_the_machine():
    """Read: no test file starts a package manager, sudo, `playwright install`, .ci/browser-up or
    .ci/wordnet-up (which install Chromium and WordNet as root). Run: conftest refuses such a process whatever
    builds its command line."""
    offenders = {f"{path.relative_to(REPO)}: {command}" for path in sorted((REPO / "tests").rglob("*.py"))
                 for command in _started_commands(path) if INSTALLS.search(command)}
    assert not offenders, f"tests that install software: {sorted(offenders)}"
    for command in REFUSED:
        with pytest.raises(SystemInstall, match="installs software"):
            subprocess.run(command, capture_output=True, check=False)


# What conftest refuses, tried above: none of these starts (the refusal comes before the process).
REFUSED = (["apt-get", "install", "-y", "chromium"], ["sudo", "true"], "apt install chromium",
           ["bash", str(REPO / ".ci" / "browser-up")], ["bash", str(REPO / ".ci" / "wordnet-up")],
           ["python", "-m", "playwright", "install", "chromium"],
           ["bash", "-c", "dnf -q install chromium"])
