"""Input: the bytes a user points cuemem at, read as `Message` records.

- `sources.py`: where bytes come from (a file, standard input, gzip, a zip archive, a folder).
- `jsonl.py`: cuemem's message JSONL, each line checked; the first pass that finds every bad line.
- `formats/`: the formats cuemem converts (ChatGPT, Claude, Claude Code, OpenAI, LoCoMo, LongMemEval), a module
  each, and `FORMATS`, their one index (the `convert` commands and `ingest --from` are made from it).
- `convert.py`: `convert`, files in one of those formats as messages: the one way every caller converts.
- `dialogue.py`: what `ingest` reads, as message JSONL: a named format converted, or JSONL with the ChatGPT and
  Claude.ai exports among it converted.
"""
