"""LLM extraction calls per turn, counted by a fake litellm provider, against one call per turn.

The fake answers every asked turn deterministically from its text, so batched and one-per-turn
extraction must yield the same cues; the number of calls is what differs.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main(locomo: str, conversation: str = "conv-26", turns: int | str = 200) -> dict:
    turns = int(turns)
    import litellm
    import orjson
    from litellm.utils import custom_llm_setup

    from cuemem_cli.input.convert import convert
    from cuemem_cli.cues.llm import LLMExtractor

    calls = {"n": 0}

    class Counting(litellm.CustomLLM):
        def completion(self, *args, **kwargs):
            calls["n"] += 1
            lines = kwargs["messages"][-1]["content"].splitlines()[1:]
            asked = [orjson.loads(line) for line in lines]
            reply = {"turns": [{"id": t["id"], "cues": [[t["speaker"], "said", w] for w in t["text"].split()[:2]]}
                               for t in asked]}
            return litellm.completion(model="gpt-4o-mini", messages=kwargs["messages"],
                                      mock_response=orjson.dumps(reply).decode())

    litellm.custom_provider_map = [{"provider": "count", "custom_handler": Counting()}]
    custom_llm_setup()
    messages = [m for m in convert("locomo", [str(locomo)]) if m.conversation == conversation][:turns]
    batched = LLMExtractor("count/x", store=None).extract(messages)
    batched_calls, calls["n"] = calls["n"], 0
    single = LLMExtractor("count/x", store=None, batch_turns=1).extract(messages)
    single_calls = calls["n"]
    result = {
        "turns": len(messages), "calls_batched": batched_calls, "calls_one_per_turn": single_calls,
        "calls_per_turn": round(batched_calls / len(messages), 3),
        "same_cues": batched == single,
        "goal": "≤ 0.15 calls per turn, same cues", "met": batched_calls / len(messages) <= 0.15 and batched == single,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(*sys.argv[1:])
