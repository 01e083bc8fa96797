"""Questions answered by a choice: yes or no ("Do the scarabs have wings?"), and one of two options ("Is my
game competitive or cooperative?"). The choice is read off the sentence that answers, so the answer line
says it with that sentence (a verdict) or names the option only one of the best sentences says.
"""

from __future__ import annotations

import re

from .spans import content_stems, stems

_AUXILIARY = r"(?:is|are|was|were|am|do|does|did|can|could|has|have|had|will|would|should|shall|may|might|must)"
_YES_NO = re.compile(rf"^\s*{_AUXILIARY}\b", re.I)
_OR = re.compile(r"^(?P<before>.*\S)\s+or\s+(?P<after>[^?]+?)\s*\??\s*$", re.I)
_SAYS_YES = re.compile(r"^\W*(?:yes|yeah|yep|sure|of course|absolutely|definitely|indeed|correct)\b", re.I)
_SAYS_NO = re.compile(r"^\W*(?:no|nope|nah|not really|never)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|neither|nor|cannot)\b|n't\b", re.I)


def options(question: str) -> list[tuple[str, set[str]]] | None:
    """The two options an "A or B?" question offers, as written and as content stems: the words after "or",
    and as many words before it; None when either option has no word of its own."""
    match = _OR.match(question)
    if not match:
        return None
    after = match["after"].split()
    before = match["before"].split()[-len(after):]
    first, second = content_stems(" ".join(before)), content_stems(" ".join(after))
    if not first - second or not second - first:
        return None
    return [(" ".join(before), first - second), (" ".join(after), second - first)]


def is_yes_no(question: str) -> bool:
    """A question opening with an auxiliary verb and offering no options: "Did I …?", "Is it OK …?"."""
    return bool(_YES_NO.match(question)) and options(question) is None


def chosen(offered: list[tuple[str, set[str]]], said: list[str]) -> tuple[int, int] | None:
    """(option, sentence): the option the first sentence of `said` (best first) naming exactly one of them
    names, and that sentence's index in `said`; None when none does."""
    for k, sentence in enumerate(said):
        words = stems(sentence)
        named = [i for i, (_, option) in enumerate(offered) if option <= words]
        if len(named) == 1:
            return named[0], k
    return None


def verdict(sentence: str) -> str:
    """Yes or No, as the sentence that answers says it: its opening word when it is one ("Yes, it's fine"),
    else No when it denies something ("they do not have wings"), else Yes."""
    if _SAYS_YES.match(sentence):
        return "Yes"
    if _SAYS_NO.match(sentence) or _NEGATION.search(sentence):
        return "No"
    return "Yes"
