"""`Settings`: the knobs of one question's reconstruction (`ask`'s options, `Memory.context(settings=…)`).

The defaults are `ask`'s (config.py); the weights are the terms of the score (score.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ASK_SEM_K, ASK_WINDOW, DEFAULT_BUDGET, DEFAULT_EXCERPT_TOKENS, DEFAULT_TOP_M


@dataclass(frozen=True)
class Settings:
    top_m: int = DEFAULT_TOP_M
    window: int = ASK_WINDOW
    sem_k: int = ASK_SEM_K
    budget: int = DEFAULT_BUDGET
    graph: bool = True
    cue_weight: float = 0.5
    context_weight: float = 0.3  # only for turn vectors of the turn alone (databases from before m005)
    speaker_weight: float = 0.2
    date_weight: float = 0.2
    temporal_weight: float = 0.2
    semantic_weight: float = 0.1
    lexical_weight: float = 0.1
    asking_weight: float = 0.05  # a turn that only asks (score.asks_only): 0.05 and 0.1 measured the same
    participant_weight: float = 0.2  # as speaker_weight; 0.1 and 0.2 measured the same (bench/memory_notes.md)
    participant_cues: bool = True  # the chats of the people a question names get their own top_m cues
    learned_names: bool = True  # a question's names the chats call people by (recall/people.py), not labels only
    circle_weight: float = 0.2  # chats of the people who hold the question's best cues (0: off, as one chat)
    lexical_m: int = 50
    excerpt_tokens: int = DEFAULT_EXCERPT_TOKENS  # 0: every turn whole
    # Turns naming a thing of the kind the question asks for (recall/kinds.py): off, as on main after 66144ec it
    # lost an inference question of realtalk's check half (0.500 -> 0.455) while it gained several-facts ones
    # (0.475 -> 0.525); bench/quality_notes.md, "What transfers". 0.05 is the value tuned.
    kind_weight: float = 0.0
    kind_m: int = 200  # such turns made candidates, the nearest the question first
    kind_limit: int = 2_000  # such turns read to choose them from
    kind_several: bool = False  # only a question asking for several (a plural: "What sports …")
    kind_max: int = 99  # a question asking for more kinds than this (a family: "hobbies", "places") gets no lift
