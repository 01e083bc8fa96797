"""Answer: the evidence turned into an answer, by a model or offline.

- `prompt.py`: the answer model's prompt and the call through litellm.
- `extractive.py`: the offline answer: the reader of the question's parts and the answer line it makes.
- `sentences.py`: which evidence sentences answer a question, best first, and whether any does.
- `stored_vectors.py`: the evidence's sentence and turn vectors read from the memory, not embedded again.
- `choices.py`: questions answered by a choice: yes or no, one of two options.
- `quotes.py`: how the offline answer quotes a sentence (its line) and whole turns (its sources).
- `question_parts.py`: what a question asks for: its parts (when, where, who, how many, what), their tense,
  and what a what-question is about.
- `changes.py`: the answer line for a fact that changed: the latest value, its day, and the earlier one.
- `spans.py`: what part of a sentence answers each kind of question part.
- `stated_dates.py`: the dates a sentence states, resolved against the day it was said.
- `kinds.py`: the kind a question asks for, in the answer line: the instances the evidence names, listed.
"""
