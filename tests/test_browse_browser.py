"""`cuemem browse` in a real browser: Debian's Chromium, headless, driven by Playwright, against a real
`cuemem browse` server on a memory built by `cuemem ingest` (the sample dialogues and hostile text; see
tests/test_browse.py, whose helpers start it).

The browser is `chromium` on PATH (Debian's package: `.ci/run` installs it with `.ci/browser-up` before the
tests) or Playwright's own download; no test installs one. Without a browser or Playwright these tests skip
and say how to get them, except under CI, where they fail.

Tiers (tests/README.md): `browser`, and `slow` and `subprocess` for the memory and server they read.

Each page's screenshot is saved; with CUEMEM_SCREENSHOTS=DIR set they go to DIR, which is how the pictures
in docs/browse.md are made: `CUEMEM_SCREENSHOTS=docs/browse python -m pytest tests/test_browse_browser.py`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import REPO, SAMPLES, tier
from test_browse import (HOSTILE, IMAGE, LINK, PROBE, SCRIPT, TITLE, Server, build_memory, cli_json, cuemem,
                         start_server, stop)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
QUESTION = "What breed is the dog Maya adopted, and when?"


# How to get a browser, said where the tests skip for want of one. No test installs it: .ci/run does, with
# .ci/browser-up, before it runs the tests (tests/test_ci_command.py holds every test to that).
GET_A_BROWSER = ("put a Chromium on PATH as `chromium` (Debian and Ubuntu: the chromium package; as root, "
                 ".ci/browser-up installs it, as .ci/run does), or download Playwright's own: python -m playwright "
                 "install chromium")


def _unavailable(why: str) -> None:
    (pytest.fail if os.environ.get("CI") else pytest.skip)(why)


def _chromium(playwright) -> str | None:
    """The Chromium to drive: `chromium` on PATH, else Playwright's own if it was downloaded (None: Playwright
    finds it). Without either the tests skip saying how to get one, and fail under CI."""
    found = shutil.which("chromium")
    if found:
        return found
    if Path(playwright.chromium.executable_path).exists():
        return None
    _unavailable(f"no Chromium to drive: {GET_A_BROWSER}")
    raise AssertionError  # not reached


@pytest.fixture(scope="module")
@tier("browser")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (it comes with the test extra: pip install 'cuemem[test]')")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=_chromium(playwright), args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
@tier("slow", "subprocess")
def server(tmp_path_factory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("browse-browser")
    db = str(folder / "memory.db")
    build_memory(db, folder)
    running = start_server(db, folder)
    try:
        yield running
    finally:
        code, stderr = stop(running)
        assert code == 0, stderr


def _tab(browser, width: int, height: int):
    context = browser.new_context(viewport={"width": width, "height": height})
    tab = context.new_page()
    tab.dialogs = []
    tab.console = []
    tab.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message), dialog.dismiss()))
    tab.on("console", lambda message: tab.console.append(message.text))
    return context, tab


@pytest.fixture
def page(browser):
    """A fresh page that fails the test on any dialog (alert, confirm: stored text running as script)
    and records the console."""
    context, tab = _tab(browser, 1200, 860)
    yield tab
    context.close()
    assert tab.dialogs == []


@pytest.fixture
def phone(browser):
    """The same, 390 pixels wide: a phone held upright."""
    context, tab = _tab(browser, 390, 844)
    yield tab
    context.close()
    assert tab.dialogs == []


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    wanted = os.environ.get("CUEMEM_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def ids_of(server: Server, conversation: str) -> dict[str, int]:
    return {t["source_id"]: t["id"] for t in server.json("api/conversation", name=conversation)["turns"]}


def test_every_page_renders(page, server, shots):
    page.goto(server.url)
    assert page.locator("h1").inner_text().startswith("Conversations")
    assert page.locator("table.conversations tbody tr").count() == 3
    page.screenshot(path=shots / "conversations.png")

    page.locator("table.conversations a", has_text="maya-and-leo").click()
    assert page.locator("h1").inner_text() == "maya-and-leo"
    assert page.locator("li.turn").count() == 84
    page.locator("li.turn details.cues summary").nth(1).click()  # open a turn's cues
    assert page.locator("li.turn details.cues[open] li.cue").count() > 0
    page.screenshot(path=shots / "conversation.png")

    maya = ids_of(server, "maya-and-leo")
    page.goto(server.url + f"turn/{maya['s3:8']}")
    assert page.locator("article.turn-detail").get_attribute("data-turn") == str(maya["s3:8"])
    assert page.locator("figure.graph svg a.node").count() > 1
    page.screenshot(path=shots / "turn.png")

    page.goto(server.url + "ask?" + urlencode({"q": QUESTION, "c": "maya-and-leo"}))
    assert page.locator("section.answer h2").inner_text() == "Offline answer (extractive)"
    assert page.locator("li.ev").count() > 0 and page.locator("figure.graph svg a.node").count() > 0
    page.screenshot(path=shots / "ask.png")
    assert not [m for m in page.console if "Content Security Policy" in m]


def test_the_search_box_finds_a_turn_and_leads_to_it(page, server, shots):
    maya = ids_of(server, "maya-and-leo")
    page.goto(server.url)
    box = page.locator("header form.search input[type=search]")
    box.fill("beagle")
    box.press("Enter")
    page.wait_for_selector("li.hit")
    hits = [int(h) for h in page.locator("li.hit").evaluate_all("els => els.map(e => e.dataset.turn)")]
    assert maya["s2:9"] in hits  # "His name is Biscuit, he's a beagle"
    assert page.locator("li.hit mark").first.inner_text().lower() == "beagle"
    page.screenshot(path=shots / "search.png")
    page.locator(f'li.hit[data-turn="{maya["s2:9"]}"] a.conv').click()
    assert page.locator("h1").inner_text() == "maya-and-leo"
    target = page.locator("li.turn.target")
    assert target.get_attribute("data-turn") == str(maya["s2:9"]) and target.is_visible()
    assert "beagle" in target.inner_text()


def test_the_question_box_shows_the_evidence_ask_context_only_gives(page, server):
    cli = cli_json(server, "ask", QUESTION, "-c", "maya-and-leo", "--context-only", "--json")
    page.goto(server.url + "ask")
    page.fill("#q", QUESTION)
    page.select_option("#c", "maya-and-leo")
    page.click("form.question button[type=submit]")
    page.wait_for_selector("li.ev")
    shown = page.locator("li.ev").evaluate_all("els => els.map(e => [e.dataset.sourceId, e.classList[1]])")
    assert shown == [[e["source_id"], e["via"]] for e in cli["evidence"]]
    scores = page.locator("li.ev .score").all_inner_texts()
    assert scores == [f"score {e['score']:.3f}" for e in cli["evidence"]]
    assert page.input_value("#q") == QUESTION and page.input_value("#c") == "maya-and-leo"


def test_the_graph_draws_a_turns_neighbours_and_clicks_through(page, server):
    maya = ids_of(server, "maya-and-leo")
    centre = maya["s2:9"]
    data = server.json(f"api/turn/{centre}")
    page.goto(server.url + f"turn/{centre}")
    drawn = page.locator("figure.graph svg a.node").evaluate_all("els => els.map(e => Number(e.dataset.turn))")
    assert sorted(drawn) == sorted({centre} | {n["turn"]["id"] for n in data["neighbours"]})
    assert page.locator("figure.graph svg a.node.center").get_attribute("data-turn") == str(centre)
    edges = page.locator("figure.graph svg path.edge").count()
    assert edges == len(data["graph"]["edges"]) and edges >= len(drawn) - 1
    semantic = next(n["turn"]["id"] for n in data["neighbours"] if n["kind"] == "semantic")
    page.locator(f'figure.graph svg a.node[data-turn="{semantic}"] circle').click()
    page.wait_for_url(f"**/turn/{semantic}")
    assert page.locator("article.turn-detail").get_attribute("data-turn") == str(semantic)
    assert page.locator("figure.graph svg a.node.center").get_attribute("data-turn") == str(semantic)
    assert page.locator(f'figure.graph svg a.node[data-turn="{centre}"]').count() == 1  # the way back


def test_hostile_text_stays_inert(page, server):
    hostile = {t["text"]: t["id"] for t in server.json("api/conversation", name=HOSTILE)["turns"]}
    visits = ["", "?" + urlencode({"q": PROBE}), "conversation?" + urlencode({"name": HOSTILE}),
              f"turn/{hostile[SCRIPT]}", f"turn/{hostile[IMAGE]}", f"turn/{hostile[LINK]}",
              "ask?" + urlencode({"q": "Which picture of the beagle breaks the page?", "c": HOSTILE})]
    for visit in visits:
        page.goto(server.url + visit)
        page.wait_for_load_state("load")
        state = page.evaluate("""() => ({
            pwned: window.__pwned === undefined ? null : String(window.__pwned),
            scripts: document.scripts.length,
            handlers: document.querySelectorAll('[onerror],[onload],[onclick]').length,
            javascript: [...document.querySelectorAll('[href],[src],[action]')]
                .filter(e => /^\\s*javascript:/i.test(e.getAttribute('href') || e.getAttribute('src')
                                                     || e.getAttribute('action') || '')).length,
            images: document.images.length,
            text: document.body.innerText,
        })""")
        assert state["pwned"] is None and state["scripts"] == 0, visit
        assert state["handlers"] == 0 and state["javascript"] == 0 and state["images"] == 0, visit
    page.goto(server.url + "conversation?" + urlencode({"name": HOSTILE}))
    text = page.evaluate("document.body.innerText")
    for shown in (SCRIPT, IMAGE, LINK, TITLE, HOSTILE):
        assert shown in text  # shown as the text it is
    assert page.dialogs == [] and not [m for m in page.console if "Content Security Policy" in m]


# ------------------------------------------------------------------- real chats: exports, ids, markdown
FIXTURES = REPO / "tests" / "fixtures"
MARKDOWN = ("Here is the plan:\n\n1. **Pack** the cello\n2. Book the `7:40` train\n\n- sunscreen\n- tickets\n\n"
            "```python\nprint('ready')\n```")


@pytest.fixture(scope="module")
@tier("slow", "subprocess")
def exports(tmp_path_factory) -> Iterator[Server]:
    """Chats shaped as real ones: a ChatGPT and a Claude.ai export (their ids UUIDs, their chats titled),
    the sample dialogue and a turn written in markdown, stored by one `cuemem ingest` of their folder."""
    folder = tmp_path_factory.mktemp("browse-exports")
    chats = folder / "chats"
    (chats / "claude").mkdir(parents=True)
    shutil.copy(FIXTURES / "chatgpt_conversations.json", chats / "conversations.json")
    shutil.copy(FIXTURES / "claude_conversations.json", chats / "claude" / "conversations.json")
    shutil.copy(SAMPLES / "maya_and_leo.jsonl", chats)
    (chats / "packing.jsonl").write_text(json.dumps(
        {"conversation": "packing", "title": "Packing for Lisbon", "id": "p1", "speaker": "assistant",
         "time": "2024-06-03T08:00:00", "text": MARKDOWN}) + "\n")
    db = str(folder / "memory.db")
    done = cuemem(db, "ingest", str(chats), "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    running = start_server(db, folder)
    try:
        yield running
    finally:
        code, stderr = stop(running)
        assert code == 0, stderr


def graph_layout(tab) -> dict:
    """Where the graph's card, drawing and labels are on the page, and whether the drawing scrolls."""
    return tab.evaluate("""() => {
        const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
        const scroll = document.querySelector('figure.graph .scroll');
        return {figure: box(document.querySelector('figure.graph')), scroll: box(scroll),
                svg: box(document.querySelector('figure.graph svg')),
                scrolls: scroll.scrollWidth > scroll.clientWidth,
                labels: [...document.querySelectorAll('figure.graph svg .run text')].map(t => [t.textContent, box(t)]),
                page: document.documentElement.scrollWidth};
    }""")


def assert_readable(layout: dict, width: int, ids: set[str]) -> None:
    """Labels by day (and chat), not by turn id, level, none over another or outside the drawing; the drawing
    inside its card (scaled to fit, or scrolling inside it), the page no wider than the screen."""
    labels = layout["labels"]
    assert labels and all(re.search(r" 20\d\d$", text) for text, _ in labels)
    assert not [text for text, _ in labels if any(i in text for i in ids)]
    for (text, (left, top, right, bottom)), (other, (left2, top2, right2, bottom2)) in combinations(labels, 2):
        assert right <= left2 or right2 <= left or bottom <= top2 or bottom2 <= top, (text, other)
    svg = layout["svg"]
    for text, (left, top, right, bottom) in labels:
        assert svg[0] - 1 <= left and right <= svg[2] + 1 and bottom - top < 20, text  # level, inside
    figure, scroll = layout["figure"], layout["scroll"]
    assert figure[2] <= width and layout["page"] <= width
    assert svg[2] <= scroll[2] + 1 or layout["scrolls"]


def test_the_graph_is_labelled_by_day_and_chat_and_fits_its_card(page, phone, exports, shots):
    """On export chats the graph's labels were the turns' UUIDs, slanted over each other and cut off, and the
    drawing was wider than its card; on a phone the search box shrank to nothing beside the memory's path."""
    question = "ask?" + urlencode({"q": "What did I plan for Lisbon, the cello and the balcony tomatoes?"})
    lisbon = next(c["conversation"] for c in exports.json("api/conversations")["conversations"]
                  if c["title"] == "Lisbon trip")
    first = exports.json("api/conversation", name=lisbon)["turns"][0]["id"]
    ids = {t["source_id"] for c in exports.json("api/conversations")["conversations"]
           for t in exports.json("api/conversation", name=c["conversation"])["turns"] if len(t["source_id"]) > 5}
    for tab, width in ((page, 1200), (phone, 390)):
        for visit in (question, f"turn/{first}"):
            tab.goto(exports.url + visit)
            layout = graph_layout(tab)
            assert_readable(layout, width, ids)
            if visit == question:
                assert any(" · " in text for text, _ in layout["labels"]), "several chats: labels name them"
        box = tab.locator("header form.search input[type=search]").bounding_box()
        assert box and box["width"] >= min(300, width - 60) and box["x"] + box["width"] <= width
    phone.goto(exports.url + question)
    phone.screenshot(path=shots / "phone.png")
    page.goto(exports.url + f"turn/{first}")
    page.locator("figure.graph").screenshot(path=shots / "graph.png")


def test_a_turns_markdown_is_rendered(page, exports):
    page.goto(exports.url + "conversation?" + urlencode({"name": "packing"}))
    turn = page.locator("li.turn .text")
    assert turn.locator("ol > li").all_inner_texts() == ["Pack the cello", "Book the 7:40 train"]
    assert turn.locator("ol strong").inner_text() == "Pack" and turn.locator("ul > li").count() == 2
    assert turn.locator("pre code").inner_text().strip() == "print('ready')"
    assert "**" not in turn.inner_text() and "```" not in turn.inner_text()
