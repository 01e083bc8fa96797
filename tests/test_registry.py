"""Extension points: extractors, embedders and answerers by name, registered in code or by entry point;
a database refuses cues of a second extractor unless mixing is asked for."""

from __future__ import annotations

import sys

import orjson
import pytest

from cuemem_cli import registry
from cuemem_cli.errors import CuememError
from cuemem_cli.records import Answer, Triple

from conftest import StubEmbedder

pytestmark = pytest.mark.usefixtures("stub_models")  # the registry's paths, with stand-ins as the defaults

CHAT = [
    {"conversation": "c", "id": "1", "time": "2024-03-01T10:00:00", "speaker": "Maya",
     "text": "I adopted Biscuit from Portland."},
    {"conversation": "c", "id": "2", "time": "2024-03-01T10:01:00", "speaker": "Leo",
     "text": "Biscuit is a lovely name."},
    {"conversation": "c", "id": "3", "time": "2024-03-02T09:00:00", "speaker": "Maya",
     "text": "We walked to Washington Park."},
]


class KeywordExtractor:
    """A third party's extractor: one cue per capitalised word after the first."""

    name = "keywords-v1"

    def extract(self, turns):
        return [[Triple(t.speaker or "", "mentions", w.strip(".,!")) for w in t.text.split()[1:] if w[0].isupper()]
                for t in turns]


def make_keywords(model=None, store=None, **_):
    return KeywordExtractor()


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch):
    """Registrations made by a test end with it."""
    monkeypatch.setattr(registry, "_REGISTRY", {kind: dict(found) for kind, found in registry._REGISTRY.items()})


@pytest.fixture
def chat_file(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in CHAT))
    return path


def cues_of(cli, db, turn: str) -> set[tuple[str, str, str]]:
    detail = orjson.loads(cli("--db", str(db), "inspect-graph", "--turn", turn, "-c", "c", "--format", "json").stdout)
    return {(c["subject"], c["relation"], c["object"]) for c in detail["cues"] if c["kind"] == "triple"}


def test_the_built_ins_are_registered_like_any_other():
    assert {"spacy", "llm"} <= set(registry.names("extractor"))
    assert {"onnx-int8", "onnx", "sentence-transformers"} <= set(registry.names("embedder"))
    assert {"extractive", "llm"} <= set(registry.names("answerer"))
    with pytest.raises(ValueError, match="registered already"):
        registry.register_extractor("spacy", make_keywords)
    with pytest.raises(ValueError, match="without ':'"):
        registry.register_embedder("a:b", make_keywords)


def test_unknown_names_are_explained(cli, chat_file, db_path):
    result = cli("--db", str(db_path), "ingest", str(chat_file), "--extractor", "nope")
    assert result.exit_code == 1 and "unknown extractor 'nope'" in result.stderr and "'spacy'" in result.stderr
    with pytest.raises(CuememError, match="unknown embedder 'nope'"):
        registry.make_embedder("nope")
    with pytest.raises(CuememError, match="takes no argument"):
        registry.make_embedder("onnx:/some/model")


def test_a_registered_extractor_is_used_by_the_cli(cli, chat_file, db_path):
    registry.register_extractor("keywords", make_keywords)
    result = cli("--db", str(db_path), "ingest", str(chat_file), "--extractor", "keywords", "--json")
    assert result.exit_code == 0, result.stderr
    assert cues_of(cli, db_path, "1") == {("Maya", "mentions", "Biscuit"), ("Maya", "mentions", "Portland")}
    assert cues_of(cli, db_path, "3") == {("Maya", "mentions", "Washington"), ("Maya", "mentions", "Park")}


def test_an_installed_package_registers_by_entry_point(cli, chat_file, db_path, tmp_path, monkeypatch):
    """A real distribution on sys.path, found by importlib.metadata only when its name is asked for."""
    site = tmp_path / "site"
    (site / "kw_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "kw_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: kw-plugin\nVersion: 1.0\n")
    (site / "kw_plugin-1.0.dist-info" / "entry_points.txt").write_text("[cuemem.extractors]\nkw = kw_plugin:make\n")
    (site / "kw_plugin.py").write_text(
        "from cuemem_cli.records import Triple\n\n"
        "class Places:\n"
        "    name = 'places-v1'\n\n"
        "    def extract(self, turns):\n"
        "        return [[Triple(t.speaker, 'named', 'Portland')] if 'Portland' in t.text else [] for t in turns]\n\n"
        "def make(**_):\n"
        "    return Places()\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "kw_plugin", raising=False)
    assert "kw" not in registry.names("extractor")
    result = cli("--db", str(db_path), "ingest", str(chat_file), "--extractor", "kw", "--json")
    assert result.exit_code == 0, result.stderr
    assert cues_of(cli, db_path, "1") == {("Maya", "named", "Portland")} and cues_of(cli, db_path, "2") == set()


def test_a_database_refuses_a_second_extractor_unless_mixing_is_asked_for(cli, chat_file, db_path, tmp_path):
    from cuemem_cli.store.sqlite import SQLiteStore

    registry.register_extractor("keywords", make_keywords)
    assert cli("--db", str(db_path), "ingest", str(chat_file)).exit_code == 0
    more = tmp_path / "more.jsonl"
    more.write_bytes(orjson.dumps({**CHAT[0], "id": "4", "text": "Leo visited Denver."}) + b"\n")

    refused = cli("--db", str(db_path), "ingest", str(more), "--extractor", "keywords")
    assert refused.exit_code == 1
    assert "holds cues from the spacy extractor" in refused.stderr and "--mix-extractors" in refused.stderr
    store = SQLiteStore.open(db_path)
    assert store.turn_count() == 3 and store.get_meta("extractor") == "spacy"
    store.close()

    mixed = cli("--db", str(db_path), "ingest", str(more), "--extractor", "keywords", "--mix-extractors")
    assert mixed.exit_code == 0, mixed.stderr
    assert cues_of(cli, db_path, "4") == {("Maya", "mentions", "Denver")}
    store = SQLiteStore.open(db_path)
    assert store.turn_count() == 4 and store.get_meta("extractor") == "keywords,spacy"
    store.close()
    assert cli("--db", str(db_path), "ingest", str(chat_file), "--extractor", "keywords").exit_code == 0  # now both


def test_a_database_from_before_the_record_is_taken_as_what_built_it(store):
    """Older databases have turns but no `extractor` meta: an LLM one recorded its extraction model."""
    from cuemem_cli.store.base import NewTurn

    with store.transaction():
        cid = store.conversation_id("c", create=True)
        store.insert_turns([NewTurn(cid, 0, "1", "hi", "h", None, None, "Maya", None, {}, "done")])
    with pytest.raises(CuememError, match="spacy extractor"):
        registry.bind_extractor(store, "llm")
    store.set_meta("extract_model", "openai/gpt-4o-mini")
    registry.bind_extractor(store, "llm")
    assert store.get_meta("extractor") == "llm"


def test_a_writer_records_all_of_a_runs_settings_or_none(store, tmp_path):
    """`open_writer`, the one way to build an ingest pipeline (Memory.writer's, the eval cache's): a run the
    memory refuses (here for its embedding model, checked last) records none of the settings it brought;
    one it accepts records them all."""
    from cuemem_cli.errors import ModelMismatch
    from cuemem_cli.ingest.pipeline import open_writer
    from cuemem_cli.store.sqlite import SQLiteStore

    from conftest import StubExtractor

    settings = {"extractor_name": "keywords", "extract_model": "some/model", "window": 3, "sem_k": 4}
    recorded = ("extractor", "extract_model", "graph_window", "graph_sem_k", "embedding_model")
    store.bind_embedder("another-model", 384, "test")
    with pytest.raises(ModelMismatch, match="another-model"):
        open_writer(store, StubExtractor(), StubEmbedder(), **settings)
    assert [store.get_meta(key) for key in recorded] == [None, None, None, None, "another-model"]
    fresh = SQLiteStore.open(tmp_path / "fresh.db")
    writer = open_writer(fresh, StubExtractor(), StubEmbedder(), **settings)
    assert (writer.window, writer.sem_k) == (3, 4)
    assert [fresh.get_meta(key) for key in recorded] == ["keywords", "some/model", "3", "4", "stub"]
    fresh.close()


def test_a_registered_answerer_answers_ask(cli, chat_file, db_path):
    seen = {}

    def make_first_turn(model=None, embedder=None, priority=True, on_token=None, **_):
        seen["model"] = model

        def answer(context):
            first = context.evidence[0]
            return Answer(text=f"{first.speaker} said it first", kind="first-turn")

        return answer

    registry.register_answerer("first-turn", make_first_turn)
    assert cli("--db", str(db_path), "ingest", str(chat_file)).exit_code == 0
    result = cli("--db", str(db_path), "ask", "Who named Biscuit?", "--answerer", "first-turn", "--json")
    assert result.exit_code == 0, result.stderr
    data = orjson.loads(result.stdout)
    assert data["answer"] == "Maya said it first" and data["answer_kind"] == "first-turn" and seen == {"model": None}
    missing = cli("--db", str(db_path), "ask", "Who named Biscuit?", "--answerer", "llm")
    assert missing.exit_code == 1 and "needs a model" in missing.stderr


def test_an_answerer_registered_over_a_built_in_one_answers_in_its_place(cli, chat_file, db_path):
    """Memory.ask calls cuemem's own answerers directly, but only while they are the ones registered."""
    seen = []

    def make_over(name):
        def make(model=None, embedder=None, priority=True, on_token=None, **_):
            seen.append((name, model))
            return lambda context: Answer(text=f"{name} replaced", kind="plugin")

        return make

    assert cli("--db", str(db_path), "ingest", str(chat_file)).exit_code == 0
    for name, options in (("extractive", []), ("llm", ["--model", "some/model"])):
        registry.register_answerer(name, make_over(name), replace=True)
        result = cli("--db", str(db_path), "ask", "Who named Biscuit?", *options, "--json")
        assert result.exit_code == 0, result.stderr
        assert orjson.loads(result.stdout)["answer"] == f"{name} replaced"
    assert seen == [("extractive", None), ("llm", "some/model")]


def test_a_registered_embedder_gets_its_argument():
    calls = []
    embedder = StubEmbedder()

    def make(argument=None, quick_start=False, **_):
        calls.append((argument, quick_start))
        return embedder

    registry.register_embedder("shared", make)
    from cuemem_cli.models.embedders import get_embedder

    assert get_embedder("shared:/models/x", quick_start=True) is embedder
    assert calls == [("/models/x", True)]


def test_a_database_built_by_a_registered_embedder_is_read_with_it(cli, chat_file, db_path, monkeypatch):
    """Its model id is its registered name: `ask` finds it from the database, without --embedder."""
    made = []

    class Letters(StubEmbedder):
        model_id = name = "letters"

    def make(**_):
        made.append(Letters())
        return made[-1]

    registry.register_embedder("letters", make)
    assert cli("--db", str(db_path), "ingest", str(chat_file), "--embedder", "letters").exit_code == 0
    result = cli("--db", str(db_path), "ask", "Who adopted Biscuit?", "--json")
    assert result.exit_code == 0, result.stderr
    assert len(made) == 2 and orjson.loads(result.stdout)["evidence"]
    monkeypatch.setattr(registry, "_REGISTRY", {kind: {} for kind in registry._REGISTRY})
    from cuemem_cli.models.embedders import spec_for

    assert spec_for("letters") == "sentence-transformers:letters", "an unknown id is a sentence-transformers model"
