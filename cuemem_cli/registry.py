"""Name → factory registries for cuemem's three extension points: cue extractors, embedders, answerers.

Every name on the command line (`--extractor`, `--embedder`, `--answerer`) is looked up here. cuemem's own
are registered by defaults.py exactly as a third party registers its own; this module imports no engine
module, so any of them may import it.

Register from your own code before using cuemem:

    from cuemem_cli.records import Triple
    from cuemem_cli.registry import register_extractor

    class KeywordExtractor:
        name = "keywords-v1"  # the extractor and the version of its rules
        def extract(self, turns):  # one list of Triple per turn; None marks a turn to retry later
            return [[Triple(t.speaker or "", "mentions", w) for w in t.text.split() if w.istitle()] for t in turns]

    register_extractor("keywords", lambda model=None, store=None, **_: KeywordExtractor())

or, for the `cuemem` command, from an installed package through an entry point, loaded only when its
name is asked for (a plugin costs nothing otherwise):

    [project.entry-points."cuemem.extractors"]   # or cuemem.embedders, cuemem.answerers
    keywords = "my_package:make_keyword_extractor"

What each factory is called with (keywords; accept `**_` for options added later) and must return:
- extractor: `factory(model=None | str, store=Store | None)` → an object with `name` and `extract(turns)`
  (cues/rules.Extractor). `model` is `--extract-model`; `store` lets it cache results in the database.
- embedder: `factory(argument=None | str, quick_start=bool)` → an models.embedders.Embedder. The spec
  `NAME:ARGUMENT` passes what follows the first colon (`sentence-transformers:/path/to/model`).
- answerer: `factory(model=None | str, embedder=<function returning the database's embedder>,
  priority=bool, on_token=None | callable)` → a function `answer(context) -> records.Answer`.

A database records the embedder's model id and the extractor's name (`bind_extractor`) and refuses to
mix either with another. An embedder whose `model_id` is the name it is registered under is found again
for the databases it built: `ask` reads them without `--embedder` (models/embedders.spec_for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import CuememError

Factory = Callable[..., Any]

_KINDS = ("extractor", "embedder", "answerer")
_REGISTRY: dict[str, dict[str, Factory]] = {kind: {} for kind in _KINDS}


def _register(kind: str, name: str, factory: Factory, replace: bool) -> None:
    if not name or ":" in name:
        raise ValueError(f"{kind} name {name!r}: give a non-empty name without ':'")
    if name in _REGISTRY[kind] and not replace:
        raise ValueError(f"an {kind} named {name!r} is registered already (pass replace=True to override it)")
    _REGISTRY[kind][name] = factory


def register_extractor(name: str, factory: Factory, replace: bool = False) -> None:
    """Make `--extractor NAME` (and `Memory(extractor=NAME)`) build cues with `factory`."""
    _register("extractor", name, factory, replace)


def register_embedder(name: str, factory: Factory, replace: bool = False) -> None:
    """Make `--embedder NAME[:ARGUMENT]` (and `Memory(embedder=...)`) embed with `factory`."""
    _register("embedder", name, factory, replace)


def register_answerer(name: str, factory: Factory, replace: bool = False) -> None:
    """Make `ask --answerer NAME` (and `Memory.ask(answerer=NAME)`) answer with `factory`."""
    _register("answerer", name, factory, replace)


def names(kind: str) -> list[str]:
    """The names registered for `kind` (entry points not yet loaded are not listed)."""
    return sorted(_REGISTRY[kind])


def registered(kind: str, name: str) -> bool:
    """Whether `name` is registered for `kind`, in code or by an installed entry point (not loaded here)."""
    from importlib.metadata import entry_points  # tens of milliseconds: only when a plugin may be asked for

    return name in _REGISTRY[kind] or bool(entry_points(group=f"cuemem.{kind}s", name=name))


def _factory(kind: str, name: str) -> Factory:
    registry = _REGISTRY[kind]
    if name not in registry:
        from importlib.metadata import entry_points

        for point in entry_points(group=f"cuemem.{kind}s", name=name):
            registry[name] = point.load()
    if name not in registry:
        known = ", ".join(repr(n) for n in sorted(registry))
        raise CuememError(f"unknown {kind} {name!r}",
                          f"use one of {known}, or register one (see cuemem_cli/registry.py)")
    return registry[name]


def make_extractor(name: str, model: str | None = None, store: Any = None) -> Any:
    return _factory("extractor", name)(model=model, store=store)


def make_embedder(spec: str, quick_start: bool = False) -> Any:
    name, _, argument = spec.partition(":")
    return _factory("embedder", name)(argument=argument or None, quick_start=quick_start)


def make_answerer(name: str, **options: Any) -> Callable[[Any], Any]:
    return answerer_factory(name)(**options)


def answerer_factory(name: str) -> Factory:
    """The factory registered as answerer `name` (from its entry point when first asked for)."""
    return _factory("answerer", name)


# ----------------------------------------------------- one extractor per database
EXTRACTOR_META = "extractor"  # the registry names of the extractors whose cues a database holds, comma-joined


def bind_extractor(store: Any, name: str, allow_mixed: bool = False) -> None:
    """Record the extractor on a database's first ingest; refuse another one afterwards.

    Cues from two extractors differ in kind (spaCy's lemma relations against an LLM's phrases), so a
    question would match one half of the history better than the other, silently. Mixing on purpose
    (say LLM cues for new turns of a spaCy database) needs `allow_mixed` (`--mix-extractors`); the
    database then records both and accepts either from then on. A database from before this record
    holds the extractor its meta implies: `llm` if an extraction model was recorded, else `spacy`.
    """
    recorded = store.get_meta(EXTRACTOR_META)
    if recorded is None and store.turn_count():
        recorded = "llm" if store.get_meta("extract_model") else "spacy"
    used = recorded.split(",") if recorded else []
    if used and name not in used and not allow_mixed:
        raise CuememError(
            f"{store.path} holds cues from the {' and '.join(used)} extractor; ingesting with {name!r} "
            "would mix two kinds of cues in one memory",
            f"use the {used[0]} extractor, add to a new database, or allow mixed extractors on purpose",
            fields=("extractor", "db", "mix_extractors"),
        )
    value = ",".join(sorted({*used, name}))
    if value != store.get_meta(EXTRACTOR_META):
        with store.transaction():
            store.set_meta(EXTRACTOR_META, value)
