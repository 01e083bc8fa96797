"""`cuemem browse`: a local, read-only web view of a memory (docs/browse.md).

- `pages.py`: what each page shows, as plain data read from a `Memory` (no HTTP here; all SQL stays in the
  store modules).
- `picture.py`: a turn's or a question's graph neighbourhood laid out as an SVG drawing (turns by time).
- `app.py`: the Starlette app: the guard (127.0.0.1, the run's token, no cross-site request), the routes,
  Jinja2 templates with autoescaping, and JSON twins of the pages.
- `server.py`: the socket, the printed URL, the browser, uvicorn, Ctrl-C.

Starlette, uvicorn and Jinja2 come with the `cuemem[browse]` extra; nothing here is imported by
`cuemem --help`.
"""
