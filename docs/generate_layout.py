"""Draw the package's imports into docs/how-it-works.md: each pipeline step a box, an arrow where one imports another.

    python docs/generate_layout.py          # rewrite the drawing between the page's layout markers
    python docs/generate_layout.py --check  # exit 1 when the drawing differs from the code

The arrows are read from the code itself (grimp, the graph import-linter checks), every import counted, those
inside functions too; tests/test_docs.py runs the check, so a new import between steps changes the picture or
fails CI. The modules every step may use (records, errors, config, …) are listed under the drawing, not drawn:
their arrows would cross every other.
"""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "how-it-works.md"
START, END = "<!-- layout:start (python docs/generate_layout.py) -->", "<!-- layout:end -->"
PACKAGE = "cuemem_cli"
# Drawn top to bottom in this order: the interfaces, the facade, the steps, the store.
ROOMS = ("cli", "mcp_server", "browse", "evaluate", "memory", "manage", "answer", "ingest", "recall", "cues",
         "input", "models", "store")
SHARED = ("records", "errors", "config", "registry", "defaults", "timeparse", "text", "files")


def room_of(module: str) -> str:
    """The box a module is drawn in: its folder, or itself for a module beside the folders."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def arrows() -> list[tuple[str, str]]:
    """(importer, imported) between boxes, each pair once, in drawing order."""
    import grimp

    graph = grimp.build_graph(PACKAGE, include_external_packages=False)
    found = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            source, target = room_of(module), room_of(imported)
            if source != target and source in ROOMS and target in ROOMS:
                found.add((source, target))
    return sorted(found, key=lambda pair: (ROOMS.index(pair[0]), ROOMS.index(pair[1])))


def render() -> str:
    lines = [START, "```mermaid", "flowchart TD"]
    lines += [f"    {room}[{room}/]" if (Path(__file__).resolve().parents[1] / PACKAGE / room).is_dir()
              else f"    {room}[{room}.py]" for room in ROOMS]
    lines += [f"    {source} --> {target}" for source, target in arrows()]
    lines += ["```", "",
              "Every box may also import " + ", ".join(f"`{name}.py`" for name in SHARED) + " (not drawn).", END]
    return "\n".join(lines)


def updated(page: str) -> str:
    before, rest = page.split(START, 1)
    _, after = rest.split(END, 1)
    return before + render() + after


def main() -> int:
    page = PAGE.read_text(encoding="utf-8")
    new = updated(page)
    if "--check" in sys.argv:
        if new != page:
            print(f"{PAGE} is stale: run python docs/generate_layout.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
