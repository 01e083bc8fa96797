"""`Memory`: the engine behind the CLI, importable by programs and agents.

    from cuemem_cli import Memory
    memory = Memory("chat.db")
    memory.add([{"speaker": "Maya", "text": "I moved to Denver last month.", "time": "2024-03-02"}],
               conversation="maya")
    print(memory.ask("Where does Maya live?").answer.text)  # every conversation; conversation= narrows it
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .defaults import OWN_ANSWERERS, llm_model
from .errors import CuememError, DiskFull, NoDatabase, ReadOnlyStore, StoreBusy
from .recall.reconstruct import reconstruct
from .recall.settings import Settings
from .records import Answer, Context, Message
from .registry import answerer_factory, make_extractor
from .store.base import Store, conversation_names, extraction_records, now_iso
from .store.open import open_store, resolve_target
from .timeparse import parse_time

if TYPE_CHECKING:  # the ingest and answer steps load when used: `ask --context-only` needs neither
    from .answer.stored_vectors import Embedded
    from .ingest.pipeline import Ingestor, IngestReport
    from .ingest.prepare import Workers


@dataclass(frozen=True)
class Result:
    context: Context
    answer: Answer

    def to_json(self) -> dict[str, Any]:
        """What `cuemem ask --json` prints for this question (Context.to_json)."""
        return self.context.to_json(self.answer)


class Memory:
    """One cuemem database: a SQLite file, or a `postgresql://` URL (store/postgres.py). Heavy parts (spaCy,
    the embedder, litellm) load on first use."""

    def __init__(self, path: str | os.PathLike[str] | None = None, embedder: str | Any | None = None,
                 extractor: str = "spacy", extract_model: str | None = None, create: bool = True,
                 mix_extractors: bool = False):
        """`path` (a SQLite file or a `postgresql://` URL) is resolved as every interface resolves its database
        (store/open.py: else $CUEMEM_DB, else the per-user default). `create=False` for readers: a mistyped
        path is an error naming it, not a new empty file.
        `extractor` and `embedder` are names from cuemem_cli.registry; `mix_extractors` lets this
        extractor add cues to a database built with another (registry.bind_extractor)."""
        self.path = resolve_target(path)
        self._create = create
        self._embedder_spec = embedder
        self._embedder = None if embedder is None or isinstance(embedder, str) else embedder
        self._extractor_name = extractor
        self._extract_model = extract_model
        self._mix_extractors = mix_extractors
        self._store: Store | None = None
        self._told_unrecorded = False  # said once that this memory could not record the turns answers used
        self._embedder_made_from: tuple[str | None] | None = None  # the spec the embedder was made from
        self._others: list[Memory] = []  # made by `another`, closed with this one
        self._embedded: Embedded | None = None  # what the offline answers embedded (answer/stored_vectors.py)

    # ----------------------------------------------------------- resources
    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.path, create=self._create)
        return self._store

    def embedder(self, quick_start: bool = False):
        """The embedder asked for; else the one this database was built with (`models/embedders.spec_for`), so that a
        database ingested with `--embedder onnx` or `sentence-transformers:MODEL` is read with that model
        without naming it again."""
        if self._embedder is None:
            from .models.embedders import get_embedder, spec_for

            spec = self._embedder_spec
            if spec is None and self.exists():
                spec = spec_for(self.store.get_meta("embedding_model"))
            self._embedder = get_embedder(spec, quick_start=quick_start)
            self._embedder_made_from = (spec,)
        return self._embedder

    def exists(self) -> bool:
        """Whether the memory exists already: a new one is not created only to read its embedding model
        (what can refuse a run is checked first, `writer`), nor by a reader (the MCP server's). A file
        that exists but is empty holds no memory yet; a PostgreSQL database is asked by opening it without
        creating the schema (a server that cannot be reached is an error, not an empty memory)."""
        if isinstance(self.path, Path):
            return self.path.exists() and self.path.stat().st_size > 0
        if self._store is None:
            try:
                self._store = open_store(self.path, create=False)
            except NoDatabase:
                return False
        return True

    def check_writable(self) -> None:
        """Raise now the error a write would meet (ReadOnlyStore, DiskFull), before models load and input is
        read for nothing; a memory not created yet has nothing to refuse."""
        if self.exists():
            self.store.check_writable()

    def another(self) -> Memory:
        """This memory again, through a database connection of its own, for another thread (a connection serves
        one thread at a time): what `cuemem browse` serves concurrent requests with. It reads with this one's
        embedder (once loaded; the model's weights load once per process anyway); closing this memory closes it."""
        other = Memory(self.path, embedder=self._embedder or self._embedder_spec, extractor=self._extractor_name,
                       extract_model=self._extract_model, create=False, mix_extractors=self._mix_extractors)
        self._others.append(other)
        return other

    def close(self) -> None:
        for other in self._others:
            other.close()
        self._others.clear()
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --------------------------------------------------------------- write
    def ingest_file(self, path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                    conversation: str | None = None, skip_invalid: bool = False,
                    progress: Callable[[int, int, int], None] | None = None, window: int | None = None,
                    sem_k: int | None = None, replace: bool = False, from_format: str | None = None,
                    all_branches: bool = False, workers: int | None = None) -> IngestReport:
        """Validate the whole input first; then write it in atomic batches. `path` is one or more message JSONL
        files, `-` (standard input), folders (their `*.jsonl` files) or gzip/zip files (input.sources.open_input),
        read in the order given, with the ChatGPT and Claude.ai exports among them converted; with `from_format`
        (a name of input.formats.FORMATS), files in that format, converted (input.dialogue.open_dialogue).
        `replace`: a line whose id is stored with another text replaces that turn (else it is reported as a
        conflict). `workers`: processes that parse and embed (`worker_count` chooses when None)."""
        from .ingest.pipeline import IngestReport
        from .input.dialogue import open_dialogue
        from .input.jsonl import read_messages, validate

        self.check_writable()  # a memory that cannot be written says so before the input is read
        paths = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
        with open_dialogue(paths, from_format, all_branches) as source:
            checked = validate(source, conversation, skip_invalid)
            report = IngestReport(lines=checked.lines, invalid=checked.invalid)
            report.empty_conversations = source.empty  # an export's conversations with nothing to store
            report.exports = dict(source.exports)
            report.files_skipped = [{"file": s.file, "why": s.why} for s in source.skipped]
            messages = read_messages(source, conversation, None, skip_invalid)
            ingestor = self.writer(window, sem_k, replace)
            pool = self._workers(workers, report.lines)
            try:
                return ingestor.run(messages, report, progress, workers=pool)
            finally:
                if pool is not None:
                    pool.close()

    def _workers(self, wanted: int | None, lines: int) -> Workers | None:
        """Worker processes for this ingest, or None to prepare batches in this process: they need an
        extractor and an embedder that a new process can make from their names (not the LLM extractor,
        whose cache is this database, nor an embedder object handed in)."""
        from .ingest.prepare import Workers, worker_count

        count = worker_count(wanted, lines)
        if count < 2 or self._extractor_name != "spacy" or self._embedder_made_from is None:
            return None
        return Workers(count, self._extractor_name, self._embedder_made_from[0])

    def add(self, messages: Iterable[dict[str, Any] | Message], conversation: str | None = None,
            window: int | None = None, sem_k: int | None = None, replace: bool = False) -> IngestReport:
        """Add messages (dicts in the JSONL format, or Message records); all are checked before any is stored
        (input.jsonl.checked_messages: one bad message rejects them all)."""
        from .ingest.pipeline import IngestReport
        from .input.jsonl import checked_messages

        parsed = checked_messages(messages, conversation)
        report = IngestReport(lines=len(parsed))
        return self.writer(window, sem_k, replace).run(parsed, report)

    def writer(self, window: int | None = None, sem_k: int | None = None, replace: bool = False,
               cues: Any = None) -> Ingestor:
        """The ingest pipeline that `ingest_file`, `add` and `import_file` run (ingest.pipeline.open_writer on
        this memory), also to keep across many small batches (`Ingestor.run`), as a server's: it holds each
        conversation's cue index in memory between them and reloads it when another process wrote. Make a new
        one after this process forgets turns or a run fails.

        What can refuse the run (options, extractor, embedder) is checked before the database file is
        created. `cues`: an extractor to use instead of this memory's, whose cues are stored as they are and
        are not this memory's extractor's (an export's recorded cues, a retry's: `extract_pending`)."""
        from .ingest.pipeline import check_graph_options, open_writer

        check_graph_options(window, sem_k)
        self.check_writable()
        embedder = self.embedder()
        if cues is not None:
            return open_writer(self.store, cues, embedder, window=window, sem_k=sem_k, replace=replace,
                               derive_cues=False)
        extractor = make_extractor(self._extractor_name, self._extract_model, _StoreWhenUsed(self))
        return open_writer(self.store, extractor, embedder, extractor_name=self._extractor_name,
                           extract_model=self._extract_model, mix_extractors=self._mix_extractors, window=window,
                           sem_k=sem_k, replace=replace)

    # ---------------------------------------------------------------- read
    def context(self, question: str, conversation: str | Sequence[str] | None = None,
                settings: Settings = Settings(), as_of: str | None = None) -> Context:
        """The evidence `ask` would give the model: cues, anchors and their one-hop neighbours, from every
        conversation of the memory, or from those `conversation` names (a name or a title, or a list)."""
        as_of_iso = _as_of(as_of)
        embedder = self.embedder(quick_start=True)
        with self.store.snapshot():  # one consistent state, whatever other processes commit meanwhile
            return reconstruct(self.store, embedder, question, conversation, settings, as_of_iso,
                               held_at=as_of_iso if as_of is not None else None)

    def ask(self, question: str, conversation: str | Sequence[str] | None = None, settings: Settings = Settings(),
            as_of: str | None = None, model: str | None = None, priority: bool = True,
            on_token: Callable[[str], None] | None = None, record_retrieval: bool = True,
            answerer: str | None = None, on_context: Callable[[Context], None] | None = None) -> Result:
        """Reconstruct the evidence (recall/reconstruct.py) and answer from it with `model` (any litellm model:
        answer/prompt.py) or, without one, extractively and offline (answer/extractive.py); `answerer` names
        another registered answerer (cuemem_cli.registry). `on_context` sees the evidence before the answer
        is asked for (the CLI prints it first, so a streamed answer comes last)."""
        name = answerer or ("llm" if model else "extractive")
        plugin = self._plugin_answerer(name, model, priority, on_token)  # refuses a name or option before any work
        llm = llm_model(model) if plugin is None and name == "llm" else None
        context = self.context(question, conversation, settings, as_of)
        if record_retrieval and context.evidence:
            self.record_used(used_by(context, now_iso()))
        if on_context is not None:
            on_context(context)
        if plugin is not None:
            answer = plugin(context)
        elif llm is not None:
            from .answer.prompt import answer_with_model

            answer = answer_with_model(context, llm, priority=priority, on_token=on_token)
        else:
            from .answer.extractive import answer_extractively
            from .answer.stored_vectors import Embedded, reading_stored

            if self._embedded is None:
                self._embedded = Embedded()
            answer = answer_extractively(context, reading_stored(self.store, context, self.embedder(quick_start=True),
                                                                self._embedded))
        return Result(context, answer)

    def _plugin_answerer(self, name: str, model: str | None, priority: bool,
                         on_token: Callable[[str], None] | None) -> Callable[[Context], Answer] | None:
        """The answer function of answerer `name` from the registry; None for cuemem's own two as defaults.py
        registers them (extractive, llm), which `ask` calls itself. A plugin registered over one of them is
        the registry's like any other."""
        factory = answerer_factory(name)
        if factory is OWN_ANSWERERS.get(name):
            return None
        return factory(model=model, embedder=lambda: self.embedder(quick_start=True), priority=priority,
                       on_token=on_token)

    def record_used(self, used: Mapping[str, Mapping[str, str]]) -> None:
        """Record when turns were last used by an answer (conversation → turn id → time), which forget --lru
        and --decay go by. Bookkeeping: a read must not fail for it, so where the write cannot be made (a
        read-only memory, a full disk, a write lock held too long) it is skipped, and that is said once per
        Memory (a warning on the `cuemem_cli` logger, which the CLI prints on stderr)."""
        try:
            store = self.store
            with store.transaction():
                for conversation, turns in used.items():
                    cid = store.conversation_id(conversation)
                    if cid is None:  # forgotten meanwhile
                        continue
                    by_time: dict[str, list[str]] = {}
                    for source_id, when in turns.items():
                        by_time.setdefault(when, []).append(source_id)
                    for when, source_ids in by_time.items():
                        store.mark_retrieved(cid, source_ids, when)
        except (ReadOnlyStore, DiskFull, StoreBusy) as exc:
            if not self._told_unrecorded:
                self._told_unrecorded = True
                logging.getLogger(__name__).warning(
                    "%s; answers still come, but the turns they use are not recorded as used (forgetting the least "
                    "recently used or decayed turns goes by that)", exc.message)

    def conversations(self) -> list[str]:
        return conversation_names(self.store)

    # --------------------------------------------------------- maintenance
    def forget(self, conversation: str | None = None, session: str | None = None, turns: Iterable[str] = (),
               before: str | None = None, decay_days: float | None = None, lru: int | None = None,
               as_of: str | None = None, dry_run: bool = False, vacuum: bool = False,
               confirm: Callable[[Any], bool] | None = None):
        """Remove the selected turns with their cues, vectors and edges (see manage/forget.py for the policies).

        `confirm(report)` sees the counts first and may decline; `dry_run` only counts; `vacuum` then
        scrubs the file and its WAL of every deleted byte. Returns a `ForgetReport`.
        """
        from .manage.forget import forget, selection_from

        selection = selection_from(conversation, session, tuple(turns), before, decay_days, lru, as_of)
        return forget(self.store, selection, dry_run=dry_run, vacuum=vacuum, confirm=confirm, embedder=self.embedder)

    def reindex(self, only: Sequence[str] | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
        """Build again what is derived from the stored turns (manage/reindex.py: who is who, the facts that
        changed, the kinds of things each turn names), which a memory written by an older cuemem lacks; `only`
        some of them, by name. Returns what each took."""
        from .manage.reindex import reindex

        return reindex(self.store, only, progress)

    def export(self, conversation: str | None = None):
        """Turns with their cues as export records (dicts), re-importable with `import_file`."""
        from .manage.export import export_records

        return export_records(self.store, conversation)

    def import_file(self, path: str, progress: Callable[[int, int, int], None] | None = None) -> IngestReport:
        """Re-create turns from a `cuemem export` file with their recorded cues (no extraction, no model call).
        The whole export is checked first (manage.export.count_turns): nothing is written if a line is bad or
        it holds no turn; then it is stored in batches by this memory's writer, with exactly those cues.
        `path` may be gzipped, or a zip archive or folder of export files."""
        from .ingest.pipeline import IngestReport
        from .input.sources import open_input
        from .manage.export import StoredCues, count_turns, read_export

        self.check_writable()
        with open_input([os.fspath(path)]) as source:
            report = IngestReport(lines=count_turns(source))
            cues = StoredCues()
            return self.writer(cues=cues).run(read_export(source, cues.remember), report, progress)

    def extract_pending(self, model: str | None = None, conversation: str | None = None) -> dict[str, Any]:
        """`cuemem extract --pending`: extract again for the turns an LLM extractor left pending (a failed
        call), then give them their cues and link them into the graph as an ingest would have."""
        from .cues.llm import LLMExtractor
        from .errors import UnknownConversation
        from .ingest.pipeline import IngestReport

        store = self.store
        cid = None
        if conversation is not None:
            cid = store.conversation_id(conversation)
            if cid is None:
                raise UnknownConversation(conversation, conversation_names(store))
        pending = [turn for turn, _ in extraction_records(store).pending_turns(cid)]
        chosen = model or store.get_meta("extract_model")
        if not pending:
            return {"completed": 0, "still_pending": [], "model": chosen, "calls": 0, "extraction_failures": []}
        if not chosen:
            raise CuememError("no extraction model recorded for these turns", "name the extraction model",
                              fields=("extract_model",))
        store.check_writable()  # before any model is paid for results that could not be stored
        extractor = LLMExtractor(chosen, store=store)
        results = extractor.extract(pending)
        report = IngestReport()
        self.writer(cues=extractor).complete_pending(pending, results, report)
        still = [f"{t.conversation}/{t.source_id}" for t, r in zip(pending, results, strict=True) if r is None]
        return {"completed": len(pending) - len(still), "still_pending": still, "model": chosen,
                "calls": extractor.calls, "cues": report.cues, "semantic_edges": report.semantic_edges,
                "extraction_failures": extractor.failures}


def used_by(context: Context, when: str) -> dict[str, dict[str, str]]:
    """The turns a context's evidence holds, by conversation (evidence may come from several), for
    Memory.record_used."""
    used: dict[str, dict[str, str]] = {}
    for e in context.evidence:
        used.setdefault(e.conversation, {})[e.source_id] = when
    return used


class _StoreWhenUsed:
    """`memory.store`, opened only when first used: an extractor is made (and may refuse its options)
    before the database file exists."""

    def __init__(self, memory: Memory):
        self._memory = memory

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory.store, name)


def _as_of(value: str | None) -> str:
    """The question time: given, or now in UTC, the clock every stored time is on (parse_time turns a
    time with a zone into UTC)."""
    if value is None:
        return now_iso()
    try:
        return parse_time(value)
    except ValueError as exc:
        raise CuememError(f"as_of: cannot read time {value!r}: {exc}",
                          "use ISO 8601 (2023-05-08T13:56:00) or e.g. '8 May 2023'", fields=("as_of",)) from None
