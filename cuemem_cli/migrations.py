"""Numbered schema migrations. Each runs once, in its own transaction, recorded in `_migrations`.

Never edit a released migration: add a new one. The schema version of a database is the number of
migrations recorded in it; a database recording a migration this code does not know was written by a
newer cuemem and is refused.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "m001_initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        );
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id),
            position INTEGER NOT NULL,
            source_id TEXT NOT NULL,
            session TEXT,
            time TEXT,
            speaker TEXT,
            role TEXT,
            text TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            extra TEXT,
            status TEXT NOT NULL DEFAULT 'done' CHECK (status IN ('done', 'pending')),
            last_retrieved_at TEXT,
            UNIQUE (conversation_id, source_id),
            UNIQUE (conversation_id, position)
        );
        CREATE INDEX turns_time ON turns(conversation_id, time);
        CREATE TABLE cues (
            id INTEGER PRIMARY KEY,
            turn_id INTEGER NOT NULL REFERENCES turns(id),
            conversation_id INTEGER NOT NULL REFERENCES conversations(id),
            subject TEXT NOT NULL,
            relation TEXT NOT NULL,
            object TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'triple'
        );
        CREATE INDEX cues_turn ON cues(turn_id);
        CREATE INDEX cues_conversation ON cues(conversation_id);
        CREATE TABLE edges (
            src INTEGER NOT NULL REFERENCES turns(id),
            dst INTEGER NOT NULL REFERENCES turns(id),
            kind TEXT NOT NULL CHECK (kind IN ('temporal', 'semantic')),
            weight REAL NOT NULL,
            rank INTEGER NOT NULL,
            PRIMARY KEY (src, kind, dst)
        ) WITHOUT ROWID;
        CREATE INDEX edges_dst ON edges(dst, kind);
        CREATE TABLE extraction_cache (
            model TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            turn_hash TEXT NOT NULL,
            triples TEXT NOT NULL,
            PRIMARY KEY (model, prompt_version, turn_hash)
        ) WITHOUT ROWID;
        CREATE VIRTUAL TABLE turns_fts USING fts5(text, content='', contentless_delete=1);
        CREATE VIRTUAL TABLE cues_fts USING fts5(text, content='', contentless_delete=1);
        """,
    ),
    (
        # One vector per turn, its whole text embedded, so a turn is scored as a whole beside its best
        # cue (reconstruct.py). Derived data, written at ingest; Store backfills older databases.
        "m002_turn_vectors",
        """
        CREATE TABLE turn_vectors (
            turn_id INTEGER PRIMARY KEY REFERENCES turns(id),
            embedding BLOB NOT NULL
        );
        """,
    ),
    (
        # Coarse cells (an inverted-file index) for conversations too large for vec0's full scan
        # (cells.py). A cell's id is its row id here and its partition in the vec0 table `cue_cells`,
        # which Store.replace_cells creates once the embedding dimension is known.
        "m003_cells",
        """
        CREATE TABLE cell_centroids (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            centroid BLOB NOT NULL
        );
        CREATE INDEX cell_centroids_conversation ON cell_centroids(conversation_id);
        """,
    ),
    (
        # Porter stemming for the lexical search: "dogs" finds "dog", "painting" finds "paint". Measured
        # on LoCoMo at 2,000 tokens: 0.864 of questions with all evidence against 0.860, no category
        # lower (bench/quality_notes.md). Both indexes are rebuilt from the rows they index.
        "m004_porter_fts",
        """
        DROP TABLE turns_fts;
        DROP TABLE cues_fts;
        CREATE VIRTUAL TABLE turns_fts USING fts5(text, content='', contentless_delete=1, tokenize='porter unicode61');
        CREATE VIRTUAL TABLE cues_fts USING fts5(text, content='', contentless_delete=1, tokenize='porter unicode61');
        INSERT INTO turns_fts(rowid, text) SELECT id, text FROM turns;
        INSERT INTO cues_fts(rowid, text) SELECT id, subject || ' ' || relation || ' ' || object FROM cues;
        """,
    ),
    (
        # From here on a turn's vector is its own tokens as the model reads them with the turn before it
        # in its session (ingest.embed_turns): a reply is read with what it answers. Vectors written before
        # held the turn alone; this records that, so they are still read as such (reconstruct.py).
        "m005_turn_vector_text",
        """
        INSERT INTO meta(key, value) SELECT 'turn_vectors', 'turn' WHERE EXISTS (SELECT 1 FROM turn_vectors);
        """,
    ),
    (
        # When each turn was stored, so `ask --as-of T` can leave out undated turns memory did not hold at
        # T (dated turns are judged by their own time). Turns stored before this migration get their
        # conversation's creation time: the earliest they can have been stored.
        "m006_turn_stored_at",
        """
        ALTER TABLE turns ADD COLUMN stored_at TEXT;
        UPDATE turns SET stored_at = (SELECT created_at FROM conversations c WHERE c.id = turns.conversation_id);
        """,
    ),
]
