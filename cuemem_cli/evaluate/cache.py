"""Ingested benchmark databases, cached so a second run skips ingest.

One database per dataset file and ingest settings (extractor, its model, embedder, the graph's
window and k) and per version of the code that shapes the database: the key hashes the input file's
bytes and the source of the ingest modules and of the cuemem modules they import, the store and its
migrations included, so a changed extractor or a change to what the store writes never silently
reuses a stale database, while a change elsewhere (answering, printing) keeps the cache.
Inside, a conversation counts as done once all its messages were written (recorded in the store's
meta table); an interrupted ingest resumes, adding only what is missing.

A database's name is `<dataset>-<what it was built from>-<ingest code>.db`. Once this version builds
one, the databases of the same data and settings from other versions of the ingest code are removed:
this version never reads them, and each holds a whole benchmark (LoCoMo's with its naive-RAG vectors
and its ablation copy), so a cache that only grew would fill a disk over upgrades or a
day of work on the extractor. Databases named as before this scheme (`<dataset>-<16 hex>.db`) are
never read either, and go the same way.
"""

from __future__ import annotations

import ast
import hashlib
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..config import BUILD_SEM_K, BUILD_WINDOW
from ..ingest.pipeline import IngestReport, open_writer
from ..input.formats import FORMATS
from ..records import Message
from ..registry import make_extractor
from ..store.base import Store

CACHE_VERSION = "eval-cache-v1"
# What turns a data file into a database, as modules of the package; `store.open` reaches the backends
# (store.sqlite, store.postgres), which consumers import only through it, and input.formats.Format.convert
# the format modules, which it imports by name.
_INGEST_ROOTS = ("input.convert", *(fmt.module.removeprefix("cuemem_cli.") for fmt in FORMATS.values()),
                 "ingest.pipeline", "cues.rules", "cues.llm", "models.embedders", "store.open")
# Imported by ingest but not deciding what it writes: errors and the LLM call mechanics do not change
# cues (the extraction prompt lives in cues.llm). The store and its migrations are hashed: the
# rows and tables they write are the database the benchmark reads.
_NOT_HASHED = frozenset({"models.llm", "errors"})


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cuemem", appauthor=False)) / "eval"


def file_digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _local_imports(package: Path, name: str) -> set[str]:
    """The package's modules that module `name` (dotted, within the package) imports, by their dotted names:
    `from .x import …`, `from ..y.z import …`, and `from . import x` where x is a module."""
    source = _module_file(package, name)
    assert source is not None
    here = name.split(".")[:-1] if source.name != "__init__.py" else name.split(".")
    found = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = here[:len(here) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        if target and _module_file(package, target) is not None:
            found.add(target)
        for alias in node.names:  # `from . import x`, `from .store import vectors`: x may be a module
            child = f"{target}.{alias.name}" if target else alias.name
            if _module_file(package, child) is not None:
                found.add(child)
    return found


def _module_file(package: Path, name: str) -> Path | None:
    """The source file of a module of the package (a package: its `__init__.py`), None if there is none."""
    path = package.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def code_digest(package: Path | None = None) -> str:
    """Hash of the ingest modules and everything they import from cuemem, found by reading their imports
    (`package`: the cuemem_cli folder to read, this one by default)."""
    package = package or Path(__file__).resolve().parents[1]
    seen: dict[str, Path] = {}
    todo = list(_INGEST_ROOTS)
    while todo:
        name = todo.pop()
        source = _module_file(package, name)
        if name in seen or name in _NOT_HASHED or source is None:
            continue
        seen[name] = source
        todo.extend(_local_imports(package, name))
    digest = hashlib.sha256()
    for name in sorted(seen):
        source = seen[name]
        digest.update(source.relative_to(package).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class BuildSettings:
    extractor: str = "spacy"
    extract_model: str | None = None
    embedder_id: str = ""
    window: int = BUILD_WINDOW
    sem_k: int = BUILD_SEM_K

    def lineage(self, dataset: str, data_digest: str) -> str:
        """What a database is built from, except the version of the ingest code."""
        parts = [CACHE_VERSION, dataset, data_digest, self.extractor, self.extract_model or "",
                 self.embedder_id, str(self.window), str(self.sem_k)]
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12]


def database_path(folder: Path, dataset: str, build: BuildSettings, data_digest: str) -> Path:
    return folder / f"{dataset}-{build.lineage(dataset, data_digest)}-{code_digest()[:8]}.db"


def turn_alone_path(db: Path) -> Path:
    """The copy with vectors of each turn alone, for the `no-context` and `mixed-context` ablations."""
    return db.with_suffix(".turn-alone.db")


def vector_dir(db: Path) -> Path:
    """Naive RAG's turn vectors (one .npy per view)."""
    return db.with_suffix(".turn-vectors")


def remove_database(db: Path) -> int:
    """Delete a cached database and everything kept beside it; returns the bytes freed."""
    files = [Path(f"{base}{suffix}") for base in (db, turn_alone_path(db)) for suffix in ("", "-wal", "-shm")]
    files += list(db.parent.glob(f"{db.name}.bak-schema*"))  # copies a schema migration kept
    vectors = vector_dir(db)
    files += list(vectors.glob("*")) if vectors.is_dir() else []
    freed = sum(f.stat().st_size for f in files if f.is_file())
    for f in files:
        f.unlink(missing_ok=True)
    shutil.rmtree(vectors, ignore_errors=True)
    return freed


def remove_superseded(db: Path) -> tuple[list[str], int]:
    """Remove the databases this version of the ingest code will never read again: the same data and
    settings built by another version, and any named before the lineage scheme. One with a write-ahead
    log beside it is open in another run (SQLite deletes the log when the last connection closes), say
    a second checkout evaluating at the same time, and is left alone. Returns the names removed and
    the bytes freed."""
    dataset, lineage, _ = db.stem.rsplit("-", 2)
    pattern = re.compile(rf"{re.escape(dataset)}-(?:{lineage}-[0-9a-f]{{8}}|[0-9a-f]{{16}})\.db")
    removed, freed = [], 0
    for other in sorted(db.parent.glob(f"{dataset}-*.db")):
        if other != db and pattern.fullmatch(other.name) and not Path(f"{other}-wal").exists():
            freed += remove_database(other)
            removed.append(other.name)
    return removed, freed


@dataclass
class IngestSummary:
    cached: list[str] = field(default_factory=list)
    ingested: list[str] = field(default_factory=list)
    turns_added: int = 0
    cues: int = 0
    pending: list[str] = field(default_factory=list)
    seconds: float = 0.0
    superseded_removed: list[str] = field(default_factory=list)  # see remove_superseded
    superseded_bytes: int = 0

    def add(self, memory: IngestSummary, superseded: tuple[list[str], int] = ([], 0)) -> None:
        """Count one memory's ingest, and the cached databases its opening removed, into the run's (an eval
        of several memories ingests each in turn)."""
        self.cached += memory.cached
        self.ingested += memory.ingested
        self.turns_added += memory.turns_added
        self.cues += memory.cues
        self.pending += memory.pending
        self.seconds = round(self.seconds + memory.seconds, 2)
        self.superseded_removed += superseded[0]
        self.superseded_bytes += superseded[1]


def _done_key(conversation: str) -> str:
    return f"eval_ingested:{conversation}"


def ensure_ingested(store: Store, messages: dict[str, list[Message]], build: BuildSettings, embedder,
                    progress: Callable[[int, int], None] | None = None) -> IngestSummary:
    """Ingest the conversations not yet complete in `store`; one Ingestor run for all of them."""
    summary = IngestSummary()
    todo = []
    for name, items in messages.items():
        if store.get_meta(_done_key(name)) == str(len(items)):
            summary.cached.append(name)
        else:
            todo.append(name)
    if not todo:
        return summary
    extractor = make_extractor(build.extractor, build.extract_model, store)
    ingestor = open_writer(store, extractor, embedder, extractor_name=build.extractor,
                           extract_model=build.extract_model, window=build.window, sem_k=build.sem_k)
    total = sum(len(messages[name]) for name in todo)
    report = IngestReport(lines=total)
    stream = (m for name in todo for m in messages[name])
    if progress:
        progress(0, total)
    ingestor.run(stream, report, (lambda done, cues, _: progress(done, total)) if progress else None)
    with store.transaction():
        for name in todo:
            store.set_meta(_done_key(name), str(len(messages[name])))
    summary.ingested, summary.turns_added, summary.cues = todo, report.turns_added, report.cues
    summary.pending, summary.seconds = report.pending, round(report.seconds, 2)
    return summary
