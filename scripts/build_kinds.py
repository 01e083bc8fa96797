"""Write cuemem_cli/data/kinds.txt, the kind lexicon that cues/kinds.py reads, from WordNet 3.0 and the hand-kept
lists below: which kinds of thing a word names ("basketball" → sport, game; "Chicago" → city; "tiramisu" →
dessert, food) and which kinds a question's word asks for ("sports" → sport; "hobbies" → the pastimes).

    apt-get install -y --no-install-recommends wordnet-base   # WordNet 3.0 under /usr/share/wordnet (Debian)
    python scripts/build_kinds.py                  # rewrite cuemem_cli/data/kinds.txt
    python scripts/build_kinds.py --check          # exit 1 when the shipped file differs from a fresh build
    python scripts/build_kinds.py --wordnet DIR    # WordNet's dict folder elsewhere (data.noun, index.noun, …)

Nothing is fetched when cuemem runs: the built file ships inside the package, with WordNet's licence beside it
(cuemem_cli/data/WORDNET-LICENSE). tests/test_kinds.py checks that this script reproduces the shipped file
byte for byte (it needs wordnet-base, and skips saying so where it is absent).

How a word gets its kinds. Each kind below names one or more WordNet noun senses ("sport.n.1": the first sense of
"sport" in WordNet's index, its most frequent). A word is tagged with a kind when one of its senses lies
under (is a hyponym or instance of) one of the kind's senses. Not every sense counts: a word's first two
senses always do, a later one only when SemCor tagged it at least a tenth as often as all of the word's
senses (cntlist.rev), so "hobby" is not a falcon and "chat" not a bird. A word read more often as a verb,
adjective or adverb than as a noun ("go", "like", "still") is left out, unless it ends in -ing ("hiking",
"cooking" name activities). People's names are left out (WordNet's instances of persons: "John", "Jordan"),
and so are Latin names of plants and animals (capitalised words of those files) and lemmas of more than
three words. A word a question asks for a kind with names a kind, not an instance, and is not tagged
("sports are fun" names no sport, "I love desserts" no food).

What WordNet lacks is kept by hand in `EXTRA` (words that name an instance: "hiking" is a walk to WordNet,
a pastime to a person; covid is not in WordNet 3.0) and `ASKS` (a question's word that gathers several
kinds: "hobbies", "places", "pets"). Kinds are general categories, never one chat's words.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "cuemem_cli" / "data" / "kinds.txt"
LICENSE = "WORDNET-LICENSE"  # written beside OUT, from the licence at the head of WordNet's data.noun
WORDNET = Path("/usr/share/wordnet")

# kind → WordNet noun senses ("lemma.n.N", N as in index.noun); the first names the kind itself.
KINDS: dict[str, tuple[str, ...]] = {
    "sport": ("sport.n.1",),
    "game": ("game.n.1", "game.n.2", "game.n.3"),
    "exercise": ("exercise.n.1",),
    "martial art": ("martial art.n.1",),
    "dance": ("dancing.n.1", "dance.n.1", "dance.n.2"),
    "art": ("art.n.1", "art.n.2"),
    "music": ("music genre.n.1", "music.n.1"),
    "instrument": ("musical instrument.n.1",),
    "book": ("book.n.1", "novel.n.1", "book.n.2"),
    "movie": ("movie.n.1",),
    "tv show": ("television program.n.1",),
    "song": ("song.n.1",),
    "band": ("band.n.2",),
    "musician": ("musician.n.1", "singer.n.1"),
    "writer": ("writer.n.1",),
    "artist": ("artist.n.1",),
    "actor": ("actor.n.1",),
    "athlete": ("athlete.n.1", "sportsman.n.1"),
    "city": ("city.n.1", "city.n.2", "town.n.1"),
    "country": ("country.n.1", "country.n.2"),
    "state": ("state.n.1",),
    "island": ("island.n.1",),
    "continent": ("continent.n.1",),
    "restaurant": ("restaurant.n.1",),
    "bar": ("barroom.n.1",),
    "museum": ("museum.n.1",),
    "park": ("park.n.1", "park.n.2"),
    "beach": ("beach.n.1",),
    "school": ("school.n.1", "school.n.2", "university.n.1", "university.n.3", "college.n.1", "college.n.2"),
    "food": ("food.n.1", "food.n.2"),
    "dish": ("dish.n.2",),
    "dessert": ("dessert.n.1",),
    "drink": ("beverage.n.1",),
    "fruit": ("edible fruit.n.1",),
    "vegetable": ("vegetable.n.1",),
    "animal": ("animal.n.1",),
    "dog": ("dog.n.1",),
    "cat": ("cat.n.1",),
    "bird": ("bird.n.1",),
    "plant": ("plant.n.2",),
    "flower": ("flower.n.1", "flower.n.2"),
    "car": ("car.n.1",),
    "vehicle": ("vehicle.n.1",),
    "clothing": ("clothing.n.1",),
    "language": ("language.n.1",),
    "subject": ("discipline.n.1",),
    "job": ("occupation.n.1", "professional.n.1"),
    "doctor": ("doctor.n.1",),
    "illness": ("illness.n.1", "disease.n.1", "ailment.n.1", "injury.n.1", "symptom.n.1"),
    "medicine": ("medicine.n.2", "drug.n.1", "remedy.n.2"),
    "company": ("company.n.1",),
    "team": ("team.n.1",),
    "club": ("club.n.2",),
    "holiday": ("holiday.n.2",),
    "festival": ("festival.n.1", "festival.n.2"),
    "concert": ("concert.n.1",),
    "party": ("party.n.2",),
    "relative": ("relative.n.1",),
    "color": ("chromatic color.n.1",),
    "trip": ("trip.n.1", "vacation.n.1"),
}

# Words that name an instance of a kind where WordNet does not say so (by hand; general words only).
EXTRA: dict[str, str] = {
    "pastime": "hiking camping cooking baking reading writing gardening fishing hunting traveling travelling "
               "photography knitting sewing pottery yoga meditation volunteering shopping painting drawing "
               "singing dancing crafting climbing cycling biking running jogging surfing skiing snowboarding "
               "kayaking sailing gaming scrapbooking woodworking",
    "illness": "covid covid-19 coronavirus",
    "pet": "puppy kitten dog cat hamster rabbit parrot goldfish guinea pig",
}

# A quoted title ("I loved reading \"Charlotte's Web\"") is tagged `title` by cues/kinds.py: these kinds take it.
TITLED = ("book", "movie", "tv show", "song", "game")
PASTIMES = ("pastime", "sport", "game", "exercise", "martial art", "dance", "art", "music", "instrument")
PLACES = ("city", "country", "state", "island", "continent", "restaurant", "bar", "museum", "park", "beach")

# A question's word that gathers several kinds (by hand); every other question word asks for the kind whose
# sense is its own first sense ("film" → movie, "athletics" → sport).
ASKS: dict[str, tuple[str, ...]] = {
    "hobby": PASTIMES, "pastime": PASTIMES, "activity": PASTIMES, "interest": (*PASTIMES, "subject"),
    "place": PLACES, "location": PLACES, "destination": ("city", "country", "state", "island", "continent", "beach"),
    "pet": ("pet", "dog", "cat", "bird"),
    "cuisine": ("dish", "food"), "recipe": ("dish", "dessert", "food"),
    "ailment": ("illness",), "disease": ("illness",), "condition": ("illness",),
    "show": ("tv show",), "series": ("tv show",), "novel": ("book",),
    "sportsman": ("athlete",), "player": ("athlete",), "remedy": ("medicine",),
}

# Function words and words too common to name a thing in chat, never tagged.
STOP = frozenset("""a an the and or but if of at by for with about to from in on into over after before is are was
were be been being do does did done have has had having i me my we our you your he him his she her it its they
them their what which who whom whose when where why how this that these those there here as than then so not no
can could would should will shall may might must just also very any some all each one two three lot lots thing
things way ways time times kind kinds sort type types day days week weeks year years month months today tonight
tomorrow yesterday yeah yes yep ok okay oh ah haha lol hey hi hello thanks thank please sure well still even
really pretty much more most like love fun good great nice cool""".split())

SENSES_ALWAYS = 2  # a word's first senses always count
SENSE_SHARE = 0.1  # a later sense counts when SemCor tagged it this share of the word's tags
VERB_DOMINANCE = 3.0  # a word read this many times more often as another part of speech is no noun to tag
PERSON_FILE, ANIMAL_FILE, PLANT_FILE = 18, 5, 20  # WordNet's lexicographer files noun.person, .animal, .plant
MAX_WORDS = 3


class WordNet:
    """The noun part of WordNet 3.0's database files, read directly (they are plain text: wndb(5WN))."""

    def __init__(self, folder: Path):
        self.words: dict[str, list[str]] = {}  # synset offset → its lemmas as written (case kept)
        self.lex_ids: dict[tuple[str, str], int] = {}  # (offset, lemma lower-cased) → lex_id
        self.hypernyms: dict[str, list[str]] = {}  # offset → hypernym and instance-hypernym offsets
        self.instance: dict[str, bool] = {}
        self.lexfile: dict[str, int] = {}
        with open(folder / "data.noun", encoding="latin-1") as data:
            for line in data:
                if line.startswith("  "):  # the licence header
                    continue
                fields = line.split(" | ", 1)[0].split()
                offset, lexfile, count = fields[0], int(fields[1]), int(fields[3], 16)
                lemmas = [re.sub(r"\((?:a|p|ip)\)$", "", fields[4 + 2 * i]).replace("_", " ") for i in range(count)]
                for i, lemma in enumerate(lemmas):
                    self.lex_ids[(offset, lemma.lower())] = int(fields[5 + 2 * i], 16)
                at = 4 + 2 * count
                pointers, at = int(fields[at]), at + 1
                up, instance = [], False
                for _ in range(pointers):
                    symbol, target, pos = fields[at:at + 3]
                    at += 4
                    if symbol in ("@", "@i") and pos == "n":
                        up.append(target)
                        instance |= symbol == "@i"
                self.words[offset], self.hypernyms[offset] = lemmas, up
                self.instance[offset], self.lexfile[offset] = instance, lexfile
        self.index: dict[str, list[str]] = {}  # lemma (lower-cased, spaces) → its synsets, most frequent first
        with open(folder / "index.noun", encoding="latin-1") as index:
            for line in index:
                if line.startswith("  "):
                    continue
                fields = line.split()
                senses, pointers = int(fields[2]), int(fields[3])
                self.index[fields[0].replace("_", " ")] = fields[6 + pointers:6 + pointers + senses]
        self.exceptions: dict[str, str] = {}  # irregular plural → its noun ("geese" → "goose")
        with open(folder / "noun.exc", encoding="latin-1") as exc:
            for line in exc:
                plural, noun = line.split()[:2]
                self.exceptions.setdefault(plural.replace("_", " "), noun.replace("_", " "))
        self.tags: collections.Counter[str] = collections.Counter()  # sense key → SemCor tags
        self.pos_tags: collections.Counter[tuple[str, str]] = collections.Counter()  # (lemma, part of speech) → tags
        with open(folder / "cntlist.rev", encoding="latin-1") as counts:
            for line in counts:
                key, _, tags = line.split()
                lemma, rest = key.split("%", 1)
                self.tags[key.lower()] += int(tags)
                self.pos_tags[(lemma.replace("_", " ").lower(), rest.split(":")[0])] += int(tags)
        self._above: dict[str, frozenset[str]] = {}

    def sense(self, spec: str) -> str:
        """The offset of "lemma.n.N"."""
        lemma, _, number = spec.rsplit(".", 2)
        return self.index[lemma][int(number) - 1]

    def above(self, offset: str) -> frozenset[str]:
        """Every synset `offset` lies under (hypernyms and instance hypernyms, transitively)."""
        if offset not in self._above:
            found: set[str] = set()
            for up in self.hypernyms[offset]:
                found |= {up, *self.above(up)}
            self._above[offset] = frozenset(found)
        return self._above[offset]

    def sense_tags(self, lemma: str, offset: str) -> int:
        key = f"{lemma.replace(' ', '_')}%1:{self.lexfile[offset]:02d}:{self.lex_ids.get((offset, lemma), 0):02d}::"
        return self.tags.get(key, 0)


def tagged_words(wn: WordNet) -> dict[str, set[str]]:
    """Word (as WordNet writes it: "Chicago", "basketball") → the kinds it names."""
    kind_of: dict[str, set[str]] = collections.defaultdict(set)
    for kind, specs in KINDS.items():
        for spec in specs:
            kind_of[wn.sense(spec)].add(kind)
    own = {wn.sense(specs[0]) for specs in KINDS.values()}

    def kinds(offset: str) -> set[str]:
        found = set() if offset in own else set(kind_of.get(offset, ()))
        for up in wn.above(offset):
            found |= kind_of.get(up, set())
        return found

    words: dict[str, set[str]] = {}
    for lemma, offsets in wn.index.items():
        parts = lemma.split(" ")
        if (len(lemma) < 3 or any(c.isdigit() for c in lemma) or lemma in STOP or len(parts) > MAX_WORDS
                or (len(parts) > 1 and (parts[0] in STOP or parts[-1] in STOP))):
            continue
        noun = wn.pos_tags[(lemma, "1")]
        other = sum(wn.pos_tags[(lemma, pos)] for pos in "2345")
        if other > VERB_DOMINANCE * max(noun, 1) and not lemma.endswith("ing"):
            continue
        tags = [wn.sense_tags(lemma, offset) for offset in offsets]
        total = sum(tags)
        for rank, offset in enumerate(offsets):
            if rank >= SENSES_ALWAYS and (not total or tags[rank] < SENSE_SHARE * total):
                continue
            if wn.instance[offset] and wn.lexfile[offset] == PERSON_FILE:
                continue
            found = kinds(offset)
            if not found:
                continue
            for form in wn.words[offset]:
                latin = wn.lexfile[offset] in (ANIMAL_FILE, PLANT_FILE) and form[:1].isupper()
                if form.lower() == lemma and not latin:
                    words.setdefault(form, set()).update(found)
    # A word a question asks for a kind with ("desserts", "cities", "sports") names a kind, not a thing:
    # "I love desserts" names no food, "the city" no city.
    asks = asked_words(wn)
    for word in [w for w in words if w.lower() in asks]:
        del words[word]
    for plural, noun in wn.exceptions.items():
        if noun in words and plural not in words and " " not in plural:
            words[plural] = set(words[noun])
    for kind, listed in EXTRA.items():
        for word in listed.split():
            words.setdefault(word.replace("_", " "), set()).add(kind)
    return words


def asked_words(wn: WordNet) -> dict[str, tuple[str, ...]]:
    """A question's word (lower-cased, singular) → the kinds it asks for: a kind's name, a word whose first
    sense is one of the kind's senses, or a word of ASKS. A word for a kind of work ("books", "films") asks
    for quoted titles too."""
    sense_kind = {wn.sense(spec): kind for kind, specs in KINDS.items() for spec in specs}
    asks: dict[str, tuple[str, ...]] = {}
    for lemma, offsets in wn.index.items():
        if offsets and offsets[0] in sense_kind and lemma not in STOP:
            asks[lemma] = (sense_kind[offsets[0]],)
    asks.update({kind: (kind,) for kind in KINDS})
    asks.update(ASKS)
    return {word: (*kinds, "title") if kinds[0] in TITLED else kinds for word, kinds in asks.items()}


HEADER = """\
# cuemem's kind lexicon: which kinds of thing a word names, and which kinds a question's word asks for.
# Built by scripts/build_kinds.py from WordNet 3.0 (Princeton University; its licence: WORDNET-LICENSE
# beside this file) and the hand-kept lists in that script. Do not edit: change the script and run it.
# "ask<TAB>word<TAB>kind,kind": a question's word (lower-cased, singular) and the kinds it asks for.
# "tag<TAB>kind,kind<TAB>word|word|…": words that name an instance of those kinds; a word with a capital
# letter matches as written, a lower-case one in any case (plurals by rule, irregular ones listed).
"""


def render(wn: WordNet) -> str:
    lines = [HEADER.rstrip("\n")]
    lines += [f"ask\t{word}\t{','.join(kinds)}" for word, kinds in sorted(asked_words(wn).items())]
    groups: dict[tuple[str, ...], list[str]] = collections.defaultdict(list)
    for word, kinds in tagged_words(wn).items():
        groups[tuple(sorted(kinds))].append(word)
    lines += [f"tag\t{','.join(kinds)}\t{'|'.join(sorted(words))}" for kinds, words in sorted(groups.items())]
    return "\n".join(lines) + "\n"


def licence(folder: Path) -> str:
    """WordNet's licence as data.noun states it (its numbered header lines), which must go with every copy."""
    lines = []
    with open(folder / "data.noun", encoding="latin-1") as data:
        for line in data:
            if not line.startswith("  "):
                break
            lines.append(re.sub(r"^\s+\d+ ?", "", line).rstrip())
    return "WordNet 3.0, from which cuemem's kinds.txt is built (scripts/build_kinds.py):\n\n" + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wordnet", type=Path, default=WORDNET, help="WordNet 3.0's dict folder")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 when --out differs from a fresh build")
    args = parser.parse_args(argv)
    if not (args.wordnet / "data.noun").is_file():
        print(f"no WordNet 3.0 at {args.wordnet}: apt-get install -y --no-install-recommends wordnet-base "
              "(or name its dict folder with --wordnet)", file=sys.stderr)
        return 2
    files = {args.out: render(WordNet(args.wordnet)), args.out.with_name(LICENSE): licence(args.wordnet)}
    if args.check:
        stale = [path for path, text in files.items() if not path.is_file() or path.read_bytes() != text.encode()]
        for path in stale:
            print(f"{path}: differs from a fresh build: run scripts/build_kinds.py")
        return 1 if stale else 0
    for path, text in files.items():
        path.write_bytes(text.encode())
        print(f"wrote {path} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
