"""The evaluation loop: load questions, ingest (cached), run every system on every question, score.

Questions are the outer loop and systems the inner one, so an interrupted run (Ctrl-C) still holds
every system's record for every question it finished: the partial summary compares like with like.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CuememError, LLMError
from ..files import private_dir
from ..recall.settings import Settings
from ..store.base import TURN_ALONE, Store
from ..store.sqlite import SQLiteStore
from . import judge as judging
from .cache import (
    BuildSettings,
    IngestSummary,
    database_path,
    default_cache_dir,
    ensure_ingested,
    file_digest,
    remove_database,
    remove_superseded,
    turn_alone_path,
    vector_dir,
)
from .datasets import Dataset, Question, load_locomo, load_longmemeval
from .metrics import evidence_scores, longmemeval_scores, offline_scores, summarise, unique_in_order
from .systems import (
    DEFAULT_SYSTEMS,
    SYSTEMS,
    TURN_ALONE_SYSTEMS,
    UNBUDGETED,
    ConversationView,
    Env,
    QueryVectors,
    Retrieval,
    count_tokens,
    system,
)
from .tokens import TOKENIZER_LABELS, TokenCounter

Progress = Callable[[str, int, int], None]  # (phase, done, total); phase is "ingest" or "questions"
MAX_CONSECUTIVE_LLM_ERRORS = 5


@dataclass
class EvalConfig:
    dataset: str  # locomo | longmemeval
    file: Path
    systems: tuple[str, ...] = DEFAULT_SYSTEMS
    budgets: tuple[int, ...] = ()  # empty: the current default budget
    top_m: int | None = None
    window: int | None = None
    sem_k: int | None = None
    conversations: tuple[str, ...] = ()  # LoCoMo sample ids, or LongMemEval question ids
    limit: int | None = None
    adversarial: bool = False
    extractor: str = "spacy"
    extract_model: str | None = None
    embedder: str | None = None
    model: str | None = None  # answerer (any litellm model)
    judge_model: str | None = None
    priority: bool = True  # False: the answer prompt without the recency instruction
    workers: int = 4  # parallel LLM calls per question
    # also answer offline (answer.extractive.answer_extractively) and score it (answer_holds)
    offline_answers: bool = False
    cache_dir: Path | None = None
    rebuild: bool = False
    store_url: str | None = None  # a postgresql:// database to evaluate on instead of the SQLite cache
    setting: str = "one-conversation"  # or "as-exports" (SETTINGS)


# The layouts. LoCoMo: each sample one conversation, its questions asked in it; or every session its own
# conversation in one memory, every question asked over the whole memory (datasets.as_export_sessions).
# LongMemEval, a memory per haystack in both (datasets.load_longmemeval): the haystack one conversation,
# the question asked in it; or the haystack's sessions its chats, the question asked over all of them
# (datasets.haystack_as_export).
SETTINGS = ("one-conversation", "as-exports")


@dataclass
class EvalResult:
    summary: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "records": self.records}


def check(config: EvalConfig) -> None:
    unknown = [s for s in config.systems if s not in SYSTEMS]
    if unknown or not config.systems:
        raise CuememError(f"unknown system {', '.join(unknown) or '(none given)'}", f"choose from {', '.join(SYSTEMS)}")
    if any(b < 1 for b in config.budgets):
        raise CuememError("a budget must be a positive number of tokens", "give budgets of 1 token or more",
                          fields=("budget",))
    if config.judge_model and not config.model:
        raise CuememError("a judge model needs an answer model to judge", "name an answer model as well",
                          fields=("model",))
    if config.dataset not in ("locomo", "longmemeval"):
        raise CuememError(f"unknown dataset {config.dataset!r}")
    if config.setting not in SETTINGS:
        raise CuememError(f"unknown setting {config.setting!r}", f"choose from {', '.join(SETTINGS)}")
    if config.store_url is not None:
        if config.dataset == "longmemeval" and config.setting == "as-exports":
            raise CuememError("LongMemEval as exports makes a memory of each question's haystack, and a PostgreSQL "
                              "store is one memory", "evaluate without a store (each memory is then a SQLite "
                              "database in the cache)", fields=("store",))
        from ..store.open import resolve_target

        if not config.store_url or not isinstance(resolve_target(config.store_url), str):  # a SQLite path
            raise CuememError(f"the store {config.store_url!r} is not a postgresql:// URL",
                              "name a PostgreSQL database, or evaluate without a store on the SQLite cache",
                              fields=("store",))
        alone = [s for s in config.systems if s in TURN_ALONE_SYSTEMS]
        if alone:
            raise CuememError(f"{', '.join(alone)} need a copy of the SQLite database and cannot run on PostgreSQL",
                              "run them without a store", fields=("store",))
        if config.rebuild:
            raise CuememError("rebuilding does not empty a PostgreSQL database",
                              "name a new, empty database as the store", fields=("store",))


def open_postgres(config: EvalConfig, lineage: str) -> Store:
    """The PostgreSQL store an eval runs on: empty, or holding this same eval (its lineage in meta), so an
    eval never mixes its conversations into someone's memory nor reads another build's."""
    from ..store.open import open_store, resolve_target

    assert config.store_url  # check() made sure it is a PostgreSQL URL
    store = open_store(resolve_target(config.store_url))
    try:
        stored = store.get_meta("eval_lineage")
        if stored is None and store.turn_count():
            raise CuememError(f"{store.path} holds conversations that no eval put there",
                              "name an empty database as the store (an eval adds its benchmark to it)",
                              fields=("store",))
        if stored is not None and stored != lineage:
            raise CuememError(f"{store.path} holds an eval built from other data or settings ({stored})",
                              "name a new, empty database as the store of this one", fields=("store",))
        if stored is None:
            with store.transaction():
                store.set_meta("eval_lineage", lineage)
    except BaseException:
        store.close()
        raise
    return store


def load_dataset(config: EvalConfig) -> Dataset:
    wanted = list(config.conversations) or None
    if config.dataset == "locomo":
        return load_locomo(config.file, wanted, config.limit, config.adversarial, config.setting == "as-exports")
    return load_longmemeval(config.file, wanted, config.limit, config.setting == "as-exports")


def base_settings(config: EvalConfig) -> Settings:
    """Today's defaults with only what the flags change."""
    flags = (("top_m", config.top_m), ("window", config.window), ("sem_k", config.sem_k))
    changes: dict[str, Any] = {k: v for k, v in flags if v is not None}
    return replace(Settings(), **changes)


def _layout(config: EvalConfig) -> str:
    """What names an eval's database: the dataset, and the setting when it lays the data out differently
    (an as-exports memory must never mix with the one-conversation one). As exports, the samples chosen
    too: every question is asked over the whole memory, so `--conversations conv-26` must have a memory
    of conv-26's sessions only, not the cached one of all ten (which made it the ten-sample setting
    again). One conversation narrows each question to its sample, so every selection shares one memory.
    (LongMemEval has a memory per haystack whatever is chosen: `_database`.)"""
    if config.setting == SETTINGS[0]:
        return config.dataset
    layout = f"{config.dataset}-{config.setting}"
    chosen = sorted(set(config.conversations))
    if chosen and config.dataset == "locomo":
        layout += f"-{len(chosen)}-{hashlib.sha256(','.join(chosen).encode()).hexdigest()[:8]}"
    return layout


def _database(config: EvalConfig, build: BuildSettings, digest: str, memory: str = "") -> Path:
    """The cached database of a memory: the layout's one, or for a layout of several memories (`memory`
    named) that memory's in a folder of the layout's (one file per LongMemEval haystack)."""
    folder, name = _cache_folder(config), _layout(config)
    if memory:
        folder, name = private_dir(folder / name), _file_name(memory)
    path = database_path(folder, name, build, digest)
    if config.rebuild:
        remove_database(path)
    return path


def _cache_folder(config: EvalConfig) -> Path:
    return private_dir(Path(config.cache_dir) if config.cache_dir else default_cache_dir())


def _remove_one_database(config: EvalConfig, build: BuildSettings, digest: str) -> tuple[list[str], int]:
    """A layout of a database per memory never reads the one database the same data had when the layout was
    one memory (LongMemEval before it was a memory per haystack), nor that one's superseded versions:
    removed (unless another run has it open), as `remove_superseded` removes other versions' databases."""
    single = database_path(_cache_folder(config), _layout(config), build, digest)
    removed, freed = remove_superseded(single)
    if single.exists() and not Path(f"{single}-wal").exists():
        freed += remove_database(single)
        removed.append(single.name)
    return removed, freed


def _file_name(memory: str) -> str:
    """A memory's name as a file name: as it is when it is safe, else made safe and told apart by a hash."""
    safe = re.sub(r"[^A-Za-z0-9_.]+", "_", memory).strip(".") or "memory"
    return safe if safe == memory else f"{safe}_{hashlib.sha256(memory.encode()).hexdigest()[:8]}"


class _Memory:
    """One memory an eval asks in, open: its store (the cached SQLite database of `memory`, or the PostgreSQL
    database given), the folder for naive RAG's turn vectors, and the turn-alone copy of the ablations.
    `superseded`: what opening it removed from the cache (`remove_superseded`)."""

    def __init__(self, config: EvalConfig, build: BuildSettings, embedder, digest: str, memory: str = ""):
        self.superseded: tuple[list[str], int] = ([], 0)
        self._scratch = None
        if config.store_url:  # PostgreSQL: the database given, naive RAG's turn vectors in a temporary folder
            import tempfile

            self.store: Store = open_postgres(config, build.lineage(_layout(config), digest))
            self._scratch = tempfile.TemporaryDirectory(prefix="cuemem-eval-")
            self.database, self.vectors = self.store.path, Path(self._scratch.name)
            self.turn_alone = _TurnAloneCopy(None, self.vectors / "unused.db", embedder)  # check() refused its systems
            return
        path = _database(config, build, digest, memory)
        sqlite = SQLiteStore.open(path)
        self.store, self.database, self.vectors = sqlite, str(path), vector_dir(path)
        self.turn_alone = _TurnAloneCopy(sqlite, turn_alone_path(path), embedder)
        self.superseded = remove_superseded(path)

    def turn_vectors(self, embedder) -> Callable[[ConversationView], np.ndarray]:
        """Naive RAG's turn vectors of a view, cached in this memory's folder for them."""
        def vectors(view: ConversationView) -> np.ndarray:
            return view.matrix(embedder, self.vectors / f"{hashlib.sha1(view.name.encode()).hexdigest()[:16]}.npy")

        return vectors

    def __enter__(self) -> _Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()
        self.turn_alone.close()
        if self._scratch is not None:
            self._scratch.cleanup()


class _TurnAloneCopy:
    """The eval database with each turn vector embedded from the turn alone (as before m005), for the
    `no-context` and `mixed-context` ablations; made on first use, cached beside the database."""

    def __init__(self, store: SQLiteStore | None, path: Path, embedder):
        self.source, self.path, self.embedder = store, path, embedder  # source None: no copy (PostgreSQL)
        self.store: SQLiteStore | None = None

    def __call__(self) -> Store:
        if self.source is None:
            raise CuememError("the no-context and mixed-context systems need a copy of a SQLite database")
        if self.store is None:
            self.store = SQLiteStore.open(self.path, create=False) if self.path.exists() else None
            if self.store is None or self.store.get_meta("copy_of_turns") != str(self.source.turn_count()):
                self.close()  # none yet, or the database has gained conversations since
                self._build(self.source)
                self.store = SQLiteStore.open(self.path, create=False)
        return self.store

    def _build(self, source: SQLiteStore) -> None:
        partial = self.path.with_name(self.path.name + ".partial")
        partial.unlink(missing_ok=True)
        source.copy_to(partial)
        copy = SQLiteStore.open(partial, create=False)
        try:
            rows = copy.all_turn_texts()
            vectors = self.embedder.embed([text for _, text in rows])
            with copy.transaction():
                copy.insert_turn_vectors(list(zip([tid for tid, _ in rows], vectors, strict=True)))
                copy.set_meta("turn_vectors", TURN_ALONE)
                copy.set_meta("copy_of_turns", str(len(rows)))
        finally:
            copy.close()
        partial.replace(self.path)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None


def make_record(dataset: str, q: Question, view: ConversationView, name: str, budget: int | None,
                found: Retrieval) -> dict[str, Any]:
    ids = [view.key_of(e) for e in found.context.evidence]
    retrieval = None
    if not q.abstention:
        retrieval = evidence_scores(q.gold_turns, ids)
        if dataset == "longmemeval":
            sessions = unique_in_order(view.turns[view.index[sid]].session for sid in found.ranked)
            extra = longmemeval_scores(found.ranked, sessions, q.gold_turns, q.gold_sessions)
            turn_ndcg = extra.pop("turn_ndcg")
            extra = {k: v for k, v in extra.items() if not k.startswith("turn_")}
            if retrieval is not None or q.gold_sessions:
                base = retrieval or {"recall": None, "all_evidence": None, "any_evidence": None}
                retrieval = {**base, "turn_ndcg": turn_ndcg, **extra}
    record = {
        "dataset": dataset, "question_id": q.qid, "conversation": q.conversation, "category": q.category,
        "abstention": q.abstention, "question": q.question, "gold_answer": q.answer, "as_of": q.as_of,
        "system": name, "budget": budget, "gold_evidence": list(q.gold_turns),
        "context_ids": ids, "tokens": count_tokens(view, found.context.evidence), "retrieval": retrieval,
        "latency_ms": {"reconstruct": round(found.latency_ms, 2), "answer": None, "judge": None},
        "answer": None, "judgement": None, "usage": {},
    }
    if dataset == "longmemeval":
        record["gold_sessions"] = list(q.gold_sessions)
    return record


class _QA:
    """Answer (the `ask` prompt) and judge one record; LLM failures are recorded, and abort when persistent."""

    def __init__(self, config: EvalConfig, dataset: str, model: str):
        self.config, self.dataset, self.model = config, dataset, model
        self.errors = 0
        self.consecutive = 0

    def __call__(self, q: Question, record: dict[str, Any], found: Retrieval) -> None:
        from ..answer.prompt import answer_with_model

        try:
            answer = answer_with_model(found.context, self.model, priority=self.config.priority)
            record.update(answer=answer.text, usage={"answer": answer.usage})
            record["latency_ms"]["answer"] = answer.timing_ms
            if self.config.judge_model:
                kind = judging.criteria_for(self.dataset, q.category, q.abstention)
                verdict = judging.judge(self.config.judge_model, kind, q.question, q.answer, answer.text)
                record.update(judgement=verdict.label, judge_reply=verdict.reply, judge_criteria=kind)
                record["usage"]["judge"] = verdict.usage
                record["latency_ms"]["judge"] = verdict.ms
            self.consecutive = 0
        except LLMError as exc:
            self.errors += 1
            self.consecutive += 1
            record["error"] = exc.message
            if self.consecutive >= MAX_CONSECUTIVE_LLM_ERRORS:
                raise


class _Offline:
    """The offline answer `ask` gives without a model, on each record's context, scored by `offline_scores`."""

    def __init__(self, embedder):
        from ..answer.stored_vectors import Embedded

        self.embedder = embedder
        self.embedded = Embedded()  # what the answers embedded, as `Memory.ask` keeps it

    def __call__(self, q: Question, record: dict[str, Any], found: Retrieval, store: Store) -> None:
        from ..answer.extractive import answer_extractively
        from ..answer.stored_vectors import reading_stored

        t0 = time.perf_counter()
        answer = answer_extractively(found.context, reading_stored(store, found.context, self.embedder, self.embedded))
        record.update(offline_answer=answer.text, offline_form=answer.form,
                      **offline_scores(q.answer, answer.text, q.abstention))
        record["latency_ms"]["offline_answer"] = round((time.perf_counter() - t0) * 1000, 2)


@dataclass
class _Progress:
    records: list[dict[str, Any]] = field(default_factory=list)
    done: int = 0  # questions finished (every system, every budget)
    ingest: IngestSummary = field(default_factory=IngestSummary)
    interrupted: bool = False
    error: str | None = None


def run(config: EvalConfig, progress: Progress | None = None, embedder=None) -> EvalResult:
    """Evaluate; on KeyboardInterrupt (also from `progress`) or a model that keeps failing, return what
    finished, marked interrupted (with the error, if any)."""
    check(config)
    started = time.perf_counter()
    notify = progress or (lambda phase, done, total: None)
    dataset = load_dataset(config)
    settings = base_settings(config)
    budgets = tuple(dict.fromkeys(config.budgets or (settings.budget,)))
    if embedder is None:
        from ..models.embedders import get_embedder

        embedder = get_embedder(config.embedder)
    build = BuildSettings(config.extractor, config.extract_model, embedder.model_id,
                          max(BuildSettings.window, settings.window), max(BuildSettings.sem_k, settings.sem_k))
    state = _Progress()
    qa = _QA(config, dataset.name, config.model) if config.model else None
    offline = _Offline(embedder) if config.offline_answers else None
    # PostgreSQL is one memory (a schema): the default LongMemEval layout's haystacks are its conversations.
    memories = dataset.split() if config.store_url is None else [("", dataset.questions, dataset.messages)]
    digest = file_digest(Path(config.file))
    turns = [sum(len(items) for items in messages.values()) for _, _, messages in memories]
    queries = QueryVectors(embedder)
    separate = bool(memories[0][0])  # a database per memory, in a folder of the layout's
    database = ""
    try:
        if separate:
            state.ingest.add(IngestSummary(), _remove_one_database(config, build, digest))
        for index, (memory, questions, messages) in enumerate(memories):
            with _Memory(config, build, embedder, digest, memory) as opened:
                database = str(Path(opened.database).parent) if separate else opened.database
                state.ingest.add(ensure_ingested(opened.store, messages, build, embedder,
                                                 _ingest_progress(notify, sum(turns[:index]), sum(turns))),
                                 opened.superseded)
                if index == 0:
                    embedder.embed(["warm-up"])  # the first call loads the model: keep that out of the first latency
                    notify("questions", 0, len(dataset.questions))
                env = Env(opened.store, queries, settings, opened.turn_vectors(embedder), opened.turn_alone)
                _questions(dataset.name, questions, len(dataset.questions), env, config.systems, budgets, qa,
                           config.workers, state, notify, offline, dataset.memory_wide)
    except KeyboardInterrupt:
        state.interrupted = True
    except LLMError as exc:  # the model kept failing: keep what finished, say why it stopped
        state.interrupted, state.error = True, exc.message
    summary = {
        "dataset": dataset.name, "setting": config.setting, "file": str(config.file), "questions": state.done,
        "questions_selected": len(dataset.questions), "interrupted": state.interrupted, "error": state.error,
        "systems": list(config.systems), "budgets": list(budgets),
        "settings": {k: v for k, v in asdict(settings).items() if k != "budget"},
        "graph_built": {"window": build.window, "sem_k": build.sem_k},
        "extractor": config.extractor, "extract_model": config.extract_model,
        "embedder": {"model": embedder.model_id, "backend": embedder.name},
        "answer_model": config.model, "judge_model": config.judge_model, "offline_answers": config.offline_answers,
        "priority_instruction": config.priority,
        "judge_prompt": judging.PROMPT_VERSION if config.judge_model else None,
        "tokenizers": {name: TOKENIZER_LABELS[name] for name in _tokenizers(state.records)},
        "categories": list(dataset.categories), "evidence_problems": dataset.problems,
        "qa_errors": qa.errors if qa else 0,
        "ingest": asdict(state.ingest), "database": database, "memories": len(memories),
        "database_per_memory": separate,  # `database` is then the folder holding them
        "elapsed_s": round(time.perf_counter() - started, 1),
        "rows": summarise(state.records, config.systems, dataset.categories),
    }
    return EvalResult(summary, state.records, state.interrupted)


def _ingest_progress(notify: Progress, before: int, total: int) -> Callable[[int, int], None]:
    """One memory's ingest progress as the run's: the turns of the memories before it, then its own."""
    return lambda done, _: notify("ingest", before + done, total)


def _questions(dataset: str, questions: list[Question], total: int, env: Env, systems: tuple[str, ...],
               budgets: tuple[int, ...], qa: _QA | None, workers: int, state: _Progress, notify: Progress,
               offline: _Offline | None, memory_wide: bool) -> None:
    """Every system (at every budget) on each question in turn; a question counts once all its records are done."""
    counter = TokenCounter()
    runners = {name: system(name) for name in systems}
    pool = ThreadPoolExecutor(workers) if qa is not None and workers > 1 else None
    view: ConversationView | None = None
    try:
        for q in questions:
            scope = None if memory_wide else q.conversation
            if view is None or view.scope_name != scope:
                view = ConversationView(env.store, scope, counter)
            env.queries.get(q.question)
            batch = []
            for name, retrieve in runners.items():
                for budget in ((None,) if name in UNBUDGETED else budgets):
                    found = retrieve(env, view, q, budget)
                    record = make_record(dataset, q, view, name, budget, found)
                    if offline is not None:
                        offline(q, record, found, env.store)
                    batch.append((record, found))
            if pool is not None and qa is not None:
                for future in [pool.submit(qa, q, rec, found) for rec, found in batch]:
                    future.result()
            elif qa is not None:
                for rec, found in batch:
                    qa(q, rec, found)
            state.records.extend(rec for rec, _ in batch)
            state.done += 1
            notify("questions", state.done, total)
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _tokenizers(records: list[dict[str, Any]]) -> list[str]:
    return list(records[0]["tokens"]) if records else ["estimate"]
