"""Cues: the (subject, relation, object) triples and statements extracted from each turn.

- `rules.py`: the default extractor, dependency rules over spaCy's parse, and date cues.
- `parser.py`: spaCy's English parser, loaded once per process (lazily), for the rules and the offline answer.
- `relative_dates.py`: what "yesterday", "last week", "3 days ago" mean on the day they were said.
- `llm.py`: an extractor that asks any litellm model, several turns per call, cached.
- `statements.py`: each sentence of a turn as a statement cue (split by `cuemem_cli.text.sentence_spans`), what
  is prose, and the text a cue is embedded as.
- `language.py`: which chats the English pipeline cannot read, said once at ingest.
- `changes.py`: facts that change: a newer turn stating another value for what an older one stated (or
  contradicting it), found at ingest.
- `names.py`: who is who: the names a chat calls its people by, learned from greetings and introductions.
- `kinds.py`: the kinds of things a turn names ("basketball" → sport) and the kind a question asks for, from
  the lexicon shipped in data/kinds.txt (scripts/build_kinds.py builds it from WordNet).
"""
