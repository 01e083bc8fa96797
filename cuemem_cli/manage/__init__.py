"""What a user does to a memory besides adding and asking (the paper's memory management, §4.4).

- `forget.py`: delete turns with everything that belongs to them, by selector or policy; scrub the file.
- `export.py`: a memory as message JSONL with its cues (`cuemem export`), and back (`cuemem import`).
- `inspect.py`: what memory holds: counts, one turn's neighbourhood, the whole graph (`inspect-graph`).
- `reindex.py`: build again what is derived from the stored turns (`cuemem reindex`), for an older memory: who
  is who, the facts that changed.
"""
