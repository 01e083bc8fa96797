"""Store: every SQL statement cuemem runs, on SQLite (one file) or PostgreSQL.

- `base.py`: the interfaces, one Protocol per user (`Store`, the engine's; `ExtractionRecords`, `Maintenance`,
  `BrowseQueries`, `EvalQueries`), the records they speak in, and what is derived from them.
- `sql/`: `SQLStore`, the queries both backends share, over a `Dialect`, a part per protocol.
- `sqlite.py`, `postgres.py`: what only each backend does (connection, KNN, full text, scrubbing).
- `migrations.py`: the schema, as numbered migrations with a body per backend.
- `vectors.py`: vectors stored as int8 codes.
- `open.py`: which backend a database target opens.
- `local_postgres.py`: `cuemem-postgres`, a throwaway local PostgreSQL server with pgvector.
"""
