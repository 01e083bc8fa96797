"""Who is who (cues/names.py): the names a chat calls its people by, learned from how they are addressed
and how they introduce themselves; and a question's spelling of a name the chat never writes."""

from __future__ import annotations

import pytest

from cuemem_cli.cues.names import addressed, introduced, learn, spelled_like
from cuemem_cli.records import Turn


def chat(*lines: tuple[str, str], conversation: str = "c") -> list[Turn]:
    return [Turn(i, conversation, i, f"t{i}", text, speaker=speaker) for i, (speaker, text) in enumerate(lines)]


TWO = {"c": frozenset({"Emi", "Elise"})}


@pytest.mark.parametrize("text, names", [
    ("Hey Kate!", ["Kate"]),
    ("Thank you so much Kate. I'm going to sign up now", ["Kate"]),
    ("Wow Kate, that looks amazing.", ["Kate"]),
    ("Kate", ["Kate"]),
    ("Hi Kate and Tom, long time", []),  # two people greeted: neither is the one reading
    ("I went to Paris with Kate.", []),
    ("Hey! How are you?", []),
    ("Certainly! Here is the recipe.", []),
])
def test_a_greeting_names_the_one_addressed(text, names):
    assert addressed(text) == names


@pytest.mark.parametrize("text, names", [
    ("Do you enjoy smoothies Kate?", ["Kate"]),
    ("That's quite ambitious, Emily!", ["Emily"]),
    ("Those look amazing Kate!", ["Kate"]),
    ("I'm from Houston, Texas.", []),  # a place after a place, not a person after a comma
    ("Have you ever been to Paris?", []),  # what the sentence is about
    ("Do you like Julio?", []),
])
def test_the_end_of_a_sentence_addresses_someone_only_after_a_word_in_lower_case(text, names):
    assert addressed(text, closing=True) == names
    assert addressed(text) == []  # a weaker sign: it supports a name, never learns one alone


@pytest.mark.parametrize("text, names", [
    ("Haha, totally forgot to introduce myself, I'm Kate. What's your name?", ["Kate"]),
    ("My name is Emilia, nice to meet you Kevin.", ["Emilia"]),
    ("I'm Italian, so pasta is serious business", []),
    ("I'm Emily", ["Emily"]),
    ("I got a puppy! Her name's Coco.", []),  # someone else's name
])
def test_an_introduction_names_its_writer(text, names):
    assert introduced(text) == names


def test_a_name_is_learned_from_greetings_for_the_other_person_of_a_chat_of_two():
    turns = chat(("Elise", "What's your name by the way?"), ("Emi", "Haha, I'm Kate. What's yours?"),
                 ("Elise", "I'm Emily"), ("Elise", "Hey Kate!"), ("Emi", "Hey Emily! How are you?"),
                 ("Elise", "Those look amazing Kate!"), ("Emi", "Thanks Emily!"), ("Elise", "I'm doing well Emily."))
    assert learn(turns, TWO) == {("c", "Kate"): "Emi", ("c", "Emily"): "Elise"}
    assert learn(turns, TWO, wanted=["Kate"]) == {("c", "Kate"): "Emi"}


def test_a_name_said_once_or_mostly_about_someone_is_not_learned():
    once = chat(("Elise", "Hey Kate!"), ("Emi", "Hi!"))
    assert learn(once, TWO) == {}
    about = chat(("Elise", "Hey Julio!"), ("Elise", "Thanks Julio!"), ("Emi", "Julio came over"),
                 ("Elise", "Julio is so funny"), ("Emi", "I met Julio at work"), ("Elise", "Did Julio call?"),
                 ("Emi", "Julio again"))
    assert learn(about, TWO) == {}  # two greetings among seven mentions: a third person, not a name of Emi


def test_a_label_is_never_learned_as_a_name_and_a_chat_of_three_learns_only_introductions():
    turns = chat(("Emi", "Hey Elise!"), ("Emi", "Thanks Elise!"))
    assert learn(turns, TWO) == {}
    three = {"c": frozenset({"Ana", "Ben", "Cy"})}
    greeted = chat(("Ana", "Hey Bobby!"), ("Cy", "Thanks Bobby!"), ("Ben", "Hi all, call me Bobby."))
    assert learn(greeted, three) == {("c", "Bobby"): "Ben"}
    assert learn(greeted[:2], three) == {}  # greeted, but by whom of the two others?


def test_a_name_is_learned_per_conversation():
    turns = [*chat(("Elise", "Hey Kate!"), ("Elise", "Hi Kate!")),
             *chat(("Paola", "Hey Bella!"), ("Paola", "Thank you, Bella!"), conversation="d")]
    people = {**TWO, "d": frozenset({"Emi", "Paola"})}
    assert learn(turns, people) == {("c", "Kate"): "Emi", ("d", "Bella"): "Emi"}


@pytest.mark.parametrize("name, known, meant", [
    ("Elisa", ["Elise", "Emi"], "Elise"),
    ("Eliza", ["Elise", "Emi"], "Elise"),  # two letters in a name of five
    ("Emiy", ["Emi", "Elise"], "Emi"),
    ("Paris", ["Paola"], None),
    ("Kim", ["Tim"], None),  # another first letter: another name
    ("Jon", ["John", "Joan"], None),  # two names as close: neither
])
def test_a_spelling_names_the_one_label_close_to_it(name, known, meant):
    assert spelled_like(name, known) == meant
