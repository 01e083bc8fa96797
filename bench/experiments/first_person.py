"""The speaker lift when the asker is a participant: LoCoMo questions that name one speaker, rewritten
in the first person as that speaker asking ("What did Caroline research?" → "What did I research?").

In a user/assistant chat the user asks about themself, and names no one: `reconstruct.addressed_roles`
reads "I"/"my" as the user's role and "you" as the assistant's. LoCoMo has no roles and third-person
questions, so this replays its questions three ways on a copy of the eval database: as written; in
the first person with no roles stored (the name, and with it the speaker lift, is gone); and in the
first person with the named speaker's turns stored as role `user`, the other's as `assistant`.

    python bench/experiments/first_person.py DB [LOCOMO_JSON]

DB is a `cuemem eval locomo` cache database (it is copied, not changed). The rewrite is a few regular
expressions (possessive → "my", "did Caroline" → "did I", she/her → I/my); its first lines are printed.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from cuemem_cli.models.embedders import get_embedder, spec_for
from cuemem_cli.evaluate.datasets import load_locomo
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.store.sqlite import SQLiteStore
from cuemem_cli.recall.view import drop_view

DEFAULT_LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"
AUXILIARY = {"does": "do", "is": "am", "has": "have"}
PRONOUNS = (("she", "I"), ("he", "I"), ("her", "my"), ("his", "my"), ("him", "me"), ("herself", "myself"),
            ("himself", "myself"))
CONDITIONS = ("as written", "first person, no roles", "first person, roles")


def first_person(question: str, name: str) -> str:
    n = re.escape(name)

    def auxiliary(match: re.Match) -> str:
        word = match.group(1)
        new = AUXILIARY.get(word.lower(), word.lower())
        return (new.capitalize() if word[0].isupper() else new) + " I"

    q = re.sub(rf"\b{n}['’]s\b", "my", question)
    q = re.sub(rf"\b(does|did|is|was|has|had|can|would|will|should|could|might) {n}\b", auxiliary, q, flags=re.I)
    for verb, first in (("is", "I am"), ("has", "I have"), ("does", "I do")):
        q = re.sub(rf"\b{n} {verb}\b", first, q)
    q = re.sub(rf"\b(to|with|for|about|from|of|at|by|on|in|help|helped|give|gave|tell|told|make|made|inspire|"
               rf"inspired|motivate|motivated) {n}\b", r"\1 me", q, flags=re.I)
    q = re.sub(rf"\b{n}\b", "I", q)
    for third, first in PRONOUNS:
        q = re.sub(rf"\b{third}\b", first, q)
    return q


def main(db: str, locomo: str = str(DEFAULT_LOCOMO)) -> None:
    with tempfile.TemporaryDirectory(prefix="cuemem-first-person-") as folder:
        copy = Path(folder) / "first-person.db"  # roles are rewritten, so never on the caller's database
        source = SQLiteStore.open(db, create=False, readonly=True)
        source.copy_to(copy)
        source.close()
        store = SQLiteStore.open(copy, create=False)
        measure(store, locomo)
        store.close()


def measure(store: SQLiteStore, locomo: str) -> None:
    embedder = get_embedder(spec_for(store.get_meta("embedding_model")), quick_start=True)
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for q in load_locomo(locomo).questions:
        if q.abstention or not q.gold_turns:
            continue
        named = [s for s in store.speakers(store.conversation_id(q.conversation))
                 if re.search(rf"\b{re.escape(s)}\b", q.question, re.I)]
        if len(named) == 1:
            groups[(q.conversation, named[0])].append(q)
    print(f"{sum(map(len, groups.values()))} questions name exactly one speaker; for example:")
    for (_, name), q in [(key, q) for key, qs in groups.items() for q in qs][:5]:
        print(f"    {q.question} → {first_person(q.question, name)}")
    recall: dict[str, dict[str, list[float]]] = {c: defaultdict(list) for c in CONDITIONS}
    for (conversation, name), questions in groups.items():
        cid = store.conversation_id(conversation)
        for condition in CONDITIONS:
            roles = condition.endswith(", roles")
            store.conn.execute("UPDATE turns SET role = CASE WHEN ?1 THEN (CASE WHEN speaker = ?2 THEN 'user'"
                               " ELSE 'assistant' END) END WHERE conversation_id = ?3", (roles, name, cid))
            store.conn.commit()
            drop_view(store)
            for q in questions:
                text = q.question if condition == "as written" else first_person(q.question, name)
                got = {e.source_id for e in reconstruct(store, embedder, text, conversation, Settings()).evidence}
                share = len(set(q.gold_turns) & got) / len(q.gold_turns)
                recall[condition][q.category].append(share)
                recall[condition]["overall"].append(share)
    for condition, per in recall.items():
        print(condition)
        for category, shares in sorted(per.items()):
            print(f"    {category:12} n={len(shares):5}  all-evidence {sum(s == 1 for s in shares) / len(shares):.3f}"
                  f"  recall {sum(shares) / len(shares):.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
