"""The `cuemem` command: parse options, call the library, print.

- `app.py`: the Typer app and its commands.
- `eval.py`: `cuemem eval`.
- `render.py`: everything printed (rich for people, JSON for pipelines, DOT/GraphML).
- `output.py`: how a failure is reported; `help.py`: how help reads, shell completion.
"""
