"""Store: every SQL statement cuemem runs, on SQLite (one file) or PostgreSQL.

- `base.py`: `Store`, the interface the pipeline is typed against, and the records it speaks in.
- `sql.py`: `SQLStore`, the queries both backends share, over a `Dialect`.
- `sqlite.py`, `postgres.py`: what only each backend does (connection, KNN, full text, scrubbing).
- `migrations.py`: the schema, as numbered migrations with a body per backend.
- `vectors.py`: vectors stored as int8 codes.
- `open.py`: which backend a database target opens.
- `local_postgres.py`: `cuemem-postgres`, a throwaway local PostgreSQL server with pgvector.
"""
