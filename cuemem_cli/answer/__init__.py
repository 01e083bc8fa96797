"""Answer: the evidence turned into an answer, by a model or offline.

- `prompt.py`: the answer model's prompt and the call through litellm.
- `extractive.py`: the offline answer read off the evidence sentences nearest the question.
- `spans.py`: what part of a sentence answers each kind of question part.
"""
