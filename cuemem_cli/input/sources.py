"""Input bytes from wherever a user points cuemem: a file, standard input (`-`), a gzip file, a zip
archive or a folder. `ingest`, `import` and the converters all read through `open_input`.

What a file holds is told by its first bytes, not its name: ChatGPT and Claude.ai deliver their exports
as .zip files, a downloaded JSONL may be gzipped whatever it is called. Gzip is decompressed as it is
read; a zip archive or a folder stands for its members that match what the reader wants (`*.jsonl` for
`ingest`, `conversations.json` for a ChatGPT export …), in path order; every other file of it is named in
`Input.skipped`, with why, for the command to tell (none is left out unsaid). Anything else that is not text
(bzip2, xz, a tar or 7z archive, a SQLite database, a PDF, UTF-16 text, other binary data) is refused
with one message saying what it is and what to do, never reported as a file of invalid lines.

Each part is opened afresh for each pass over it (ingest reads its input twice: validated, then stored),
so a folder of thousands of files never holds thousands of open files, and memory stays flat. Only
standard input and pipes (`<(zcat …)`) are kept, in temporary files, since they cannot be read twice.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import os
import shutil
import stat
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, NamedTuple, cast

from ..errors import CuememError

STDIN = "-"
STDIN_NAME = "<stdin>"
_SNIFF = 1024  # bytes read to tell what a file is
_BOM = b"\xef\xbb\xbf"
_READ_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile)

Opener = Callable[[], IO[bytes]]


class Skipped(NamedTuple):
    """A file of a folder or zip archive that is not read, and why (`notes.txt`, "text, not JSONL")."""

    file: str
    why: str


class Part(NamedTuple):
    """One stream of input: its name in messages (`a.jsonl`, `export.zip/chats/a.jsonl`, `<stdin>`) and
    how to open it from its start, decompressed."""

    name: str
    opener: Opener


@dataclass
class Input:
    """The parts of one input, in reading order, and what messages call all of it."""

    parts: list[Part]
    name: str
    spools: list[IO[bytes]] = field(default_factory=list)  # temporary files closed with the input
    skipped: list[Skipped] = field(default_factory=list)  # the files of its folders and archives not read
    exports: dict[str, str] = field(default_factory=dict)  # a part read as a chat export → its format (dialogue.py)
    empty: list[str] = field(default_factory=list)  # conversations converted that had no message to store

    @classmethod
    def of_spool(cls, spool: IO[bytes], name: str) -> Input:
        """An input held in a (temporary) binary file, which closing the input closes."""
        return cls([Part(name, rewound(spool))], name, [spool])

    def close(self) -> None:
        for spool in self.spools:
            spool.close()
        self.spools.clear()

    def __enter__(self) -> Input:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_input(paths: Sequence[str], members: Sequence[str] = ("*.jsonl",), what: str = ".jsonl files") -> Input:
    """Every path's parts, in the order given: a file, `-` (standard input, once), a folder (its files
    matching `members` (or those names + `.gz`), recursively, in path order compared name by name, hidden
    ones left out) or a zip archive (its matching members, in the same order); gzip is decompressed wherever
    it appears. The files of a folder or archive that do not match are named in `skipped`, with why. `what`
    names the members in the error for a folder or archive that has none. What every part is, is checked
    here, before anything is read for real."""
    if list(paths).count(STDIN) > 1:
        raise CuememError("standard input (-) can be read only once", "name it once among the files")
    source = Input([], "")
    try:
        for path in paths:
            source.parts += _parts_of(path, members, what, source.spools, source.skipped)
    except BaseException:
        source.close()
        raise
    if len(source.parts) == 1:
        source.name = source.parts[0].name
    elif len(paths) == 1:
        source.name = f"{_shown(paths[0])} ({len(source.parts)} files)"
    else:
        source.name = ", ".join(_shown(p) for p in paths)
    return source


def rewound(spool: IO[bytes]) -> Opener:
    """How to read a (temporary) file from its start each time, leaving it open for the next pass."""
    return lambda: io.BufferedReader(_Borrowed(spool))


def lines_of(part: Part) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) of a part from its start, without the UTF-8 byte order mark a first line
    may carry (Windows editors write one). A file that fails while it is read (a damaged archive, a
    gzip stream cut short) is an error naming it."""
    with _reading(part.name), part.opener() as handle:
        for number, raw in enumerate(handle, start=1):
            yield number, raw.removeprefix(_BOM) if number == 1 else raw


def read_all(part: Part) -> bytes:
    """A part's bytes, without a UTF-8 byte order mark (for readers of whole JSON documents)."""
    with _reading(part.name), part.opener() as handle:
        return handle.read().removeprefix(_BOM)


def display_stem(name: str) -> str:
    """The stem of a part's name (`stdin` for standard input; `chat` for `chat.json` and `chat.json.gz`), for
    names derived from a file's."""
    if name == STDIN_NAME:
        return "stdin"
    return Path(Path(name).name.removesuffix(".gz")).stem


@contextmanager
def _reading(name: str) -> Iterator[None]:
    """Read errors of a part (damage found only as it is decompressed) as one message naming it."""
    try:
        yield
    except _READ_ERRORS as exc:
        raise CuememError(f"{name}: cannot be read ({exc})", "it is cut short or damaged: copy or download it again"
                          ) from None


def _shown(path: str) -> str:
    return STDIN_NAME if path == STDIN else path


def _parts_of(path: str, members: Sequence[str], what: str, spools: list[IO[bytes]],
              skipped: list[Skipped]) -> list[Part]:
    if path == STDIN:
        stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else io.BytesIO(sys.stdin.read().encode())
        return _decoded(_spooled(stdin, spools), STDIN_NAME, members, what, skipped)
    where = Path(path)
    if where.is_dir():
        files, passed = _folder(where, members)
        if not files:
            held = f": it holds {listed(passed)}" if passed else ": it is empty"
            raise CuememError(f"{path}: no {what} in this folder{held}",
                              f"name the files, or a folder that holds {what}")
        skipped += passed
        return [part for file in files for part in _parts_of(str(file), members, what, spools, skipped)]
    try:
        with open(where, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # a pipe (`<(zcat …)`) reads once only
                return _decoded(_spooled(handle, spools), path, members, what, skipped)
    except FileNotFoundError:
        raise CuememError(f"{path}: no such file", "check the path") from None
    except OSError as exc:
        raise CuememError(f"cannot read {path}: {exc.strerror or exc}") from None
    return _decoded(lambda: open(where, "rb"), path, members, what, skipped)


def _folder(where: Path, members: Sequence[str]) -> tuple[list[Path], list[Skipped]]:
    """A folder's files that match `members`, in path order, and the others with why they are not read (a
    hidden file or folder once, as itself: what is inside `.git/` is nobody's chat)."""
    chosen: list[Path] = []
    passed: list[Skipped] = []
    hidden: set[Path] = set()
    for file in sorted(p for p in where.rglob("*") if p.is_file()):
        inside = file.relative_to(where).parts
        dot = next((i for i, part in enumerate(inside) if part.startswith(".")), None)
        if dot is not None:
            top = where.joinpath(*inside[:dot + 1])
            if top not in hidden:
                hidden.add(top)
                passed.append(Skipped(str(top) + ("/" if top.is_dir() else ""), "hidden"))
        elif _matches(file.name, members):
            chosen.append(file)
        else:
            passed.append(Skipped(str(file), _why_not_read(file.name, _head(file))))
    return chosen, passed


def _head(file: Path) -> bytes:
    try:
        with open(file, "rb") as handle:
            return handle.read(_SNIFF)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}".encode()


SHOWN_SKIPPED = 10  # files a message names before "… and N more"


def listed(skipped: Sequence[Skipped]) -> str:
    """`notes.txt (text, not JSONL), photo.png (an image)`, the first SHOWN_SKIPPED of them, names relative
    to the folder or archive they were found in."""
    shown = ", ".join(f"{Path(s.file).name}{'/' if s.file.endswith('/') else ''} ({s.why})"
                      for s in skipped[:SHOWN_SKIPPED])
    return shown + (f", … and {len(skipped) - SHOWN_SKIPPED} more" if len(skipped) > SHOWN_SKIPPED else "")


# What a file that is not read is, by its first bytes, then its name.
_IMAGES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"II*\x00", b"MM\x00*", b"BM")
_KINDS_BY_NAME = {".json": "JSON, not a chat export cuemem recognises (another format is read when named)",
                  ".html": "HTML", ".htm": "HTML", ".csv": "CSV, not JSONL", ".md": "text, not JSONL",
                  ".txt": "text, not JSONL", ".zip": "a zip archive: ingest it on its own",
                  **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic"), "an image")}


def _why_not_read(name: str, head: bytes) -> str:
    """Why a file of a folder or archive is not read, in a few words: what it is."""
    if head.startswith(b"unreadable: "):
        return head.decode()
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "a zip archive: ingest it on its own"
    if head.startswith(_IMAGES) or head[8:12] == b"WEBP" or head[4:12] in (b"ftypheic", b"ftypavif"):
        return "an image"
    known = next((what for magic, what, _ in _NOT_TEXT if head.startswith(magic)), None)
    if known is not None:
        return known.split(",")[0]
    if head[257:262] == b"ustar":
        return "a tar archive"
    if b"\x00" in head:
        return "binary data"
    suffix = Path(name.removesuffix(".gz")).suffix.lower()
    return _KINDS_BY_NAME.get(suffix, "not a .jsonl file")


def _spooled(stream: IO[bytes], spools: list[IO[bytes]]) -> Opener:
    """A stream that can be read once (standard input, a pipe), kept in a temporary file for each pass."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the Input, through `spools`
    spools.append(spool)
    shutil.copyfileobj(stream, spool, 1 << 20)
    return rewound(spool)


def _decoded(opener: Opener, name: str, members: Sequence[str], what: str, skipped: list[Skipped]) -> list[Part]:
    """The stream as text parts: gzip decompressed, a zip archive's members, anything else not text refused."""
    with _reading(name), opener() as handle:
        head = handle.read(_SNIFF)
    if head.startswith(b"\x1f\x8b"):
        return _decoded(lambda: cast(IO[bytes], _Gunzip(opener())), name, members, what, skipped)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return _zip_members(opener, name, members, what, skipped)
    _refuse_non_text(head, name)
    return [Part(name, opener)]


def _zip_members(opener: Opener, name: str, members: Sequence[str], what: str, skipped: list[Skipped]) -> list[Part]:
    with _reading(name), opener() as raw, zipfile.ZipFile(raw) as archive:
        entries = [info.filename for info in archive.infolist()
                   if not info.is_dir() and not info.filename.startswith("__MACOSX/")]
    chosen = sorted((entry for entry in entries if _matches(Path(entry).name, members)),
                    key=lambda entry: PurePosixPath(entry).parts)  # as a folder's files: name by name
    if not chosen:
        held = ", ".join(entries[:5]) + (", …" if len(entries) > 5 else "")
        export = any(Path(entry).name == "conversations.json" for entry in entries)
        hint = "it looks like a ChatGPT or Claude.ai export, read as the chatgpt or claude format" if export \
            else f"it should hold {what}"
        raise CuememError(f"{name}: a zip archive without {what} (it holds {held or 'nothing'})", hint,
                          fields=("from_format",) if export else ())
    skipped += [Skipped(f"{name}/{entry}", _why_not_read(entry, b"")) for entry in sorted(set(entries) - set(chosen))]
    return [part for entry in chosen
            for part in _decoded(_member_opener(opener, entry, f"{name}/{entry}"), f"{name}/{entry}", members, what,
                                 skipped)]


def _member_opener(archive: Opener, entry: str, shown: str) -> Opener:
    def opener() -> IO[bytes]:
        raw = archive()
        try:
            zipped = zipfile.ZipFile(raw)  # given a file object, zipfile never closes it: _Closing does
            return _Closing(zipped.open(entry), zipped, raw)
        except RuntimeError as exc:  # an encrypted member
            raw.close()
            raise CuememError(f"{shown}: cannot be read from its archive ({exc})",
                              "unpack the archive yourself and give the folder") from None
        except BaseException:
            raw.close()
            raise

    return opener


class _Closing(io.BufferedReader):
    """A stream that closes what it was read through too (a zip member: its archive and file)."""

    def __init__(self, stream: IO[bytes], *also: IO[bytes] | zipfile.ZipFile):
        super().__init__(stream)  # type: ignore[arg-type]
        self._also = also

    def close(self) -> None:
        try:
            super().close()
        finally:
            for resource in self._also:
                resource.close()


class _Gunzip(gzip.GzipFile):
    """A gzip stream that closes the file it reads (GzipFile leaves a given file object open)."""

    def __init__(self, raw: IO[bytes]):
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


class _Borrowed(io.RawIOBase):
    """A view of a spool from its start; closing the view leaves the spool open for the next pass."""

    def __init__(self, spool: IO[bytes]):
        self._spool = spool
        spool.seek(0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._spool.readinto(buffer)  # type: ignore[attr-defined]


def _matches(filename: str, members: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(filename, p) or fnmatch.fnmatchcase(filename, p + ".gz") for p in members)


# What the first bytes say a file is, and what to do about it.
_SQLITE = b"SQLite format 3\x00"
_DECOMPRESS = "decompress it first, e.g. `{tool} -dk FILE` (cuemem reads gzip and zip itself)"
_UNPACK = "unpack it (e.g. `{tool} FILE`) and give the folder, or repack it as .zip"
_NOT_TEXT: list[tuple[bytes, str, str]] = [
    (b"BZh", "a bzip2-compressed file", _DECOMPRESS.format(tool="bzip2")),
    (b"\xfd7zXZ\x00", "an xz-compressed file", _DECOMPRESS.format(tool="xz")),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file", _DECOMPRESS.format(tool="zstd")),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive", _UNPACK.format(tool="7z x")),
    (b"Rar!\x1a\x07", "a RAR archive", _UNPACK.format(tool="unrar x")),
    (_SQLITE, "a SQLite database, not input text",
     "if it is a cuemem memory, open FILE as the database instead; to copy one memory into another, export it "
     "and import the export"),
    (b"%PDF-", "a PDF document, not input text", "cuemem reads chat messages as JSONL: see docs/input-formats.md"),
    (b"\xff\xfe", "UTF-16 text; cuemem reads UTF-8", "convert it: iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8"),
    (b"\xfe\xff", "UTF-16 text; cuemem reads UTF-8", "convert it: iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8"),
]


def _refuse_non_text(head: bytes, name: str) -> None:
    for magic, what, hint in _NOT_TEXT:
        if head.startswith(magic):
            raise CuememError(f"{name}: {what}", hint if name == STDIN_NAME else hint.replace("FILE", name),
                              fields=("db", "copy") if magic == _SQLITE else ())
    if head[257:262] == b"ustar":
        raise CuememError(f"{name}: a tar archive", f"unpack it (tar -xf {name}) and give the folder")
    if b"\x00" in head and not head.lstrip(_BOM + b" \t\r\n").startswith((b"{", b"[")):
        raise CuememError(f"{name}: binary data, not UTF-8 text",
                          "cuemem reads chat messages as JSONL text: see docs/input-formats.md")
