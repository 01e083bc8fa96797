"""Context size, counted three ways so numbers compare with the paper's and with any budget.

- `estimate`: `recall.lines.turn_cost` (characters / 4 of the evidence line), the unit every system's
  budget is filled in, so baselines and CueMem get equal room;
- `wordpiece`: the all-MiniLM-L6-v2 WordPiece tokenizer cuemem ships (untruncated);
- `cl100k_base`: GPT-4's BPE, read from the copy litellm bundles (tiktoken would otherwise
  download it); left out when that copy is missing, so nothing ever reaches the network.

A context's count is the sum over its evidence lines (each line as the answer prompt shows it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from importlib import resources
from pathlib import Path
from typing import Any

TOKENIZER_LABELS = {
    "estimate": "characters / 4 (the budget unit)",
    "wordpiece": "WordPiece (all-MiniLM-L6-v2)",
    "cl100k_base": "cl100k_base (tiktoken, litellm's bundled copy)",
}
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _wordpiece():
    from tokenizers import Tokenizer

    text = (resources.files("cuemem_cli") / "data" / "minilm_tokenizer.json").read_text(encoding="utf-8")
    tokenizer = Tokenizer.from_str(text)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _cl100k() -> Any | None:
    """tiktoken's cl100k_base from litellm's bundled file, or None (never a download)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None or importlib.util.find_spec("tiktoken") is None:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    if not (folder / hashlib.sha1(_CL100K_URL.encode()).hexdigest()).exists():
        return None
    import tiktoken

    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # a corrupt bundled file: report without this tokenizer rather than fail the run
        return None
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


class TokenCounter:
    """The real tokenizers (the estimate is `recall.lines.turn_cost`, taken where the budget is filled)."""

    def __init__(self):
        self._wordpiece = _wordpiece()
        self._cl100k = _cl100k()
        self.names = ("wordpiece",) + (("cl100k_base",) if self._cl100k is not None else ())

    def count(self, lines: list[str]) -> list[dict[str, int]]:
        """Per line: {tokenizer name: tokens}."""
        wordpiece = [len(e.ids) for e in self._wordpiece.encode_batch(lines, add_special_tokens=False)]
        cl100k = [len(ids) for ids in self._cl100k.encode_ordinary_batch(lines)] if self._cl100k else None
        return [{"wordpiece": wp, **({"cl100k_base": cl100k[i]} if cl100k else {})} for i, wp in enumerate(wordpiece)]
