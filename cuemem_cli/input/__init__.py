"""Input: the bytes a user points cuemem at, read as `Message` records.

- `sources.py`: where bytes come from (a file, standard input, gzip, a zip archive, a folder).
- `jsonl.py`: cuemem's message JSONL, each line checked; the first pass that finds every bad line.
- `converters.py`: other formats (LoCoMo, LongMemEval, ChatGPT, Claude, Claude Code, OpenAI) as messages.
- `exports.py`: what `ingest` reads with no format named: JSONL, and the ChatGPT and Claude.ai exports among it.
"""
