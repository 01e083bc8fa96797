"""Ingest: messages → turns → cues → vectors → graph edges, stored in atomic batches.

- `pipeline.py`: `Ingestor`, the batches and what a run reports.
- `prepare.py`: a batch's cues and vectors, made without touching the database (threads or processes).
- `graph.py`: the turn graph's temporal and semantic edges.
- `names.py`: who is who: each turn's signs of a name, and each conversation's names learned from them.
- `kinds.py`: each stored turn's kinds of things, written as a batch is stored and again by `cuemem reindex`.
"""
