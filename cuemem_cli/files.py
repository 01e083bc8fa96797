"""Folders for cuemem's files, private to the user: databases, caches, model weights, sockets."""

from __future__ import annotations

import os
from pathlib import Path


def private_dir(path: str | os.PathLike, ours: bool = False) -> Path:
    """`path` as a directory, created 0700 when it is new.

    A folder that exists already keeps its mode: it may be the user's own (the one a `--db` file is put
    in). With `ours`, the folder and its parent are cuemem's alone (the model cache and its socket,
    e.g. ~/.cache/cuemem/models): both are made 0700 even if they exist, since mkdir's mode does not
    apply to parents and a folder someone else created keeps its mode.
    """
    folder = Path(path).expanduser()
    if ours:
        for each in (folder.parent, folder):
            each.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(each, 0o700)
    elif not folder.exists():
        folder.mkdir(parents=True, mode=0o700)
        os.chmod(folder, 0o700)
    return folder
