"""Recall: a question → its top cues → anchor turns → one hop over the graph → scored evidence in a budget.

- `reconstruct.py`: `reconstruct`, the steps in order.
- `settings.py`: `Settings`, the knobs of one question.
- `scope.py`: which conversations a question ranges over (names, titles).
- `question.py`: what a question says beyond its vector: words, pronouns, periods, people.
- `people.py`: who a question names: by label, by a name the chat calls them, or a near spelling.
- `score.py`: each candidate's score (the formula and why each term is there).
- `kinds.py`: the turns that name an instance of the kind a question asks for, made candidates.
- `evidence.py`, `lines.py`, `excerpt.py`: the evidence block as the answer model reads it, what it costs,
  long turns as excerpts, and the budget filled by rank.
- `changes.py`: the two turns of a fact that changed kept together in the budget; "now" ranks the newer first.
- `view.py`: a memory held in memory for a process that asks many questions.
"""
