"""The only module that imports litellm: offline switches, retries with backoff, one call shape.

litellm takes seconds to import and, without the offline switches, tries the network for a model cost
map; so it is imported here, lazily, by the commands that call a model and by nothing else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import LLMError

_OFFLINE_ENV = {
    "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    "LITELLM_LOG": "ERROR",
}


def litellm():
    """Import litellm with its network look-ups switched off (environment wins if set)."""
    for key, value in _OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    import litellm as _litellm

    _litellm.suppress_debug_info = True
    _litellm.telemetry = False
    return _litellm


@dataclass
class Completion:
    text: str
    usage: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _retryable(exc: Exception) -> bool:
    lib = litellm()
    retry_types = tuple(
        getattr(lib, name)
        for name in ("RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError",
                     "InternalServerError")
        if hasattr(lib, name)
    )
    return isinstance(exc, retry_types)


def complete(model: str, messages: list[dict[str, str]], *, temperature: float = 0.0,
             max_tokens: int | None = None, retries: int = 3, backoff: float = 1.0, timeout: float = 120,
             on_token: Callable[[str], None] | None = None, **kwargs: Any) -> Completion:
    """One chat completion through litellm; transient errors are retried with exponential backoff.

    A missing API key fails at once, naming the variable. A streamed answer is not retried once its
    first token was shown: a second attempt would print the answer's beginning again.
    """
    lib = litellm()
    if model.startswith("local/"):
        from .local_llm import register

        register(lib, model)
    else:
        _check_key(lib, model, kwargs)
    started = time.perf_counter()
    shown = {"any": False}
    for attempt in range(1, retries + 2):
        try:
            if on_token is not None:
                return _stream(lib, model, messages, temperature, max_tokens, timeout, _noting(on_token, shown),
                               started, kwargs)
            response = lib.completion(model=model, messages=messages, temperature=temperature,
                                      max_tokens=max_tokens, timeout=timeout, num_retries=0, **kwargs)
            text = response.choices[0].message.content or ""
            usage = getattr(response, "usage", None)
            return Completion(text, _usage(usage), time.perf_counter() - started)
        except Exception as exc:  # litellm maps every provider error to its own exception types
            if shown["any"]:
                raise LLMError(f"model {model} failed while streaming its answer: {type(exc).__name__}: "
                               f"{str(exc)[:300]}", "the answer above is cut short; ask again") from exc
            if attempt <= retries and _retryable(exc):
                time.sleep(backoff * 2 ** (attempt - 1))
                continue
            raise LLMError(f"model {model} failed: {type(exc).__name__}: {str(exc)[:300]}",
                           *_hint_for(exc, model)) from exc
    raise AssertionError("unreachable")


def _noting(on_token: Callable[[str], None], shown: dict[str, bool]) -> Callable[[str], None]:
    """on_token, recording that a token was shown (after which the call is not retried)."""
    def show(token: str) -> None:
        shown["any"] = True
        on_token(token)

    return show


_KEYLESS_POSSIBLE = {"azure", "azure_ai", "huggingface"}


def _check_key(lib, model: str, kwargs: dict[str, Any]) -> None:
    """Fail before any request when the provider's API key is not in the environment (litellm knows
    which variable each provider reads); otherwise the request fails only after its retries."""
    if kwargs.get("api_key") or kwargs.get("api_base") or "mock_response" in kwargs:
        return
    if model.split("/", 1)[0] in {entry["provider"] for entry in lib.custom_provider_map}:
        return
    try:
        found = lib.validate_environment(model=model)
    except Exception:  # a model litellm cannot place: the call itself will say what is wrong
        return
    keys = found.get("missing_keys") or []
    # Only a provider that lacks nothing but an API key: AWS profiles, Google ADC, Azure AD tokens and
    # keyless Hugging Face endpoints authenticate without one, and are left to the call itself.
    if keys and all(k.endswith("_API_KEY") for k in keys) and not found.get("keys_in_environment") \
            and model.split("/", 1)[0] not in _KEYLESS_POSSIBLE:
        raise LLMError(f"model {model} needs {' or '.join(keys)} in the environment, and it is not set",
                       f"export {keys[0]}=…, or answer offline, without a model", fields=("model",))


def _stream(lib, model, messages, temperature, max_tokens, timeout, on_token, started, kwargs):
    parts: list[str] = []
    usage: dict[str, int] = {}
    for chunk in lib.completion(model=model, messages=messages, temperature=temperature, max_tokens=max_tokens,
                                timeout=timeout, num_retries=0, stream=True, **kwargs):
        delta = chunk.choices[0].delta.content if chunk.choices else None
        if delta:
            parts.append(delta)
            on_token(delta)
        if getattr(chunk, "usage", None):
            usage = _usage(chunk.usage)
    return Completion("".join(parts), usage, time.perf_counter() - started)


def _usage(usage: Any) -> dict[str, int]:
    if not usage:
        return {}
    return {k: int(getattr(usage, k, 0) or 0) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def _hint_for(exc: Exception, model: str) -> tuple[str, tuple[str, ...]]:
    """What to do about a failed call, and the fields (CuememError.fields) that hint names."""
    name = type(exc).__name__
    if "Authentication" in name:
        return ("set the provider's API key in the environment (e.g. OPENAI_API_KEY), or answer offline, without "
                "a model", ("model",))
    if "NotFound" in name or "BadRequest" in name:
        return f"check the model name {model!r} (litellm's provider/model form, e.g. openai/gpt-4o-mini)", ("model",)
    return "check the network and the provider's status, then try again", ()
