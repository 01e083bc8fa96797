"""Docstrings and docs cite the measurements behind a choice by file and heading, e.g.
`bench/RESULTS.md, "Ingest at scale"` or `(bench/memory_notes.md, "Ditto marks and the reader")`: the quoted
words must still open a section of that file, so a renamed heading or a note moved elsewhere fails here
instead of leaving a pointer to nothing.

A section is a markdown heading, or the first words of a paragraph or list item (the notes files open each
note with its name: "- Ditto marks and the reader (issue 34, …)."). The file is looked up beside the citing
file first, then from the repository root, then in bench/.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

CITATION = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md)[,:]?\s+(?:its table |section )?\\?\"([^\"\\]{3,200})\\?\"")
CITING = ("cuemem_cli/**/*.py", "tests/*.py", "tests/*.md", "docs/*.md", "docs/*.py", "bench/**/*.py",
          "bench/**/*.md", "README.md", "sample_dialogues/*.md")


def _joined(text: str) -> str:
    """Lines joined as one (a citation may break across lines, in a docstring or behind `#` comments)."""
    return re.sub(r"\s*\n\s*(?:#+\s+)?", " ", text)


def _words(text: str) -> str:
    """Spaces folded, markdown's code and emphasis marks dropped (a heading "`ingest`" is cited as "ingest")."""
    return re.sub(r"\s+", " ", re.sub(r"[`*]", "", text)).strip()


def section_openings(markdown: Path) -> list[str]:
    """Each section's opening words: headings without their #, paragraphs and list items with their next line."""
    lines = markdown.read_text(encoding="utf-8").splitlines()
    openings = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("#"):
            openings.append(_words(stripped.lstrip("#")))
        elif stripped and (i == 0 or not lines[i - 1].strip() or re.match(r"[-*] |\d+\. ", stripped)):
            opening = re.sub(r"^(?:[-*]|\d+\.)\s+", "", stripped).lstrip("*_")
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            openings.append(_words(f"{opening} {following}"))
    return openings


def citations() -> list[tuple[str, str, str]]:
    """(citing file, cited file, quoted words) for every citation in the repository's code and docs."""
    found = []
    for pattern in CITING:
        for path in sorted(REPO.glob(pattern)):
            for match in CITATION.finditer(_joined(path.read_text(encoding="utf-8"))):
                found.append((str(path.relative_to(REPO)), match[1], _words(match[2])))
    return found


def resolve(citing: str, cited: str) -> Path | None:
    for folder in ((REPO / citing).parent, REPO, REPO / "bench"):
        if (folder / cited).is_file():
            return folder / cited
    return None


def test_the_citations_are_found():
    """The pattern still sees the citations (a reformatting that hid them all would pass the test below)."""
    cited = citations()
    assert len(cited) >= 50
    assert any(f == "bench/design-notes.md" and q.startswith("Measured choices") for _, f, q in cited)


def test_every_cited_section_exists():
    missing = []
    for citing, cited, quoted in citations():
        markdown = resolve(citing, cited)
        if markdown is None:
            missing.append(f"{citing}: {cited} does not exist")
        elif not any(opening.startswith(quoted) for opening in section_openings(markdown)):
            missing.append(f'{citing}: no section of {cited} opens with "{quoted}"')
    assert not missing, "\n".join(missing)
