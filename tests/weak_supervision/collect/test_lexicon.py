"""Lexicon filter: the SI / MH data files and the one-regex matcher, on hand-written sentences."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

import pytest

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.lexicons import BUILTIN, Lexicon, Match

EXPECTED = {
    "si": {"self_harm_death_wish", "hopelessness", "burdensomeness"},
    "mh": {"depression", "anxiety", "panic", "insomnia", "help_seeking"},
    "wide": {"mood", "anhedonia", "sleep_appetite", "energy_cognition", "worthlessness", "death", "disclosure"},
}


@pytest.fixture(scope="module")
def si() -> Lexicon:
    return Lexicon.load("si")


@pytest.fixture(scope="module")
def mh() -> Lexicon:
    return Lexicon.load("mh")


def terms(lex: Lexicon, text: str) -> list[str]:
    return [m.term for m in lex.match(text)]


# ------------------------------------------------------------------------------------ data files
@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_categories_each_have_at_least_20_terms(name):
    lex = Lexicon.load(name)
    assert set(lex.counts()) == EXPECTED[name]
    assert all(n >= 20 for n in lex.counts().values()), lex.counts()


@pytest.mark.parametrize("name", BUILTIN)
def test_no_term_is_listed_twice_in_the_file(name):
    import tomllib

    raw = resources.files("mhaudit.weak_supervision.lexicons").joinpath(f"{name}.toml").read_text("utf-8")
    doc = tomllib.loads(raw)
    listed = [t for table in doc["categories"].values() for t in table["terms"]]
    assert len(listed) == len(set(listed)) == len(Lexicon.load(name))
    assert all(t == t.lower().strip() for t in listed)


@pytest.mark.parametrize("name", BUILTIN)
def test_header_names_the_project_and_version(name):
    raw = resources.files("mhaudit.weak_supervision.lexicons").joinpath(f"{name}.toml").read_text("utf-8")
    header = raw.split("[lexicon]")[0]
    assert "mhaudit" in header and header.lstrip().startswith("#")
    assert Lexicon.load(name).version == "1.0.0" and Lexicon.load(name).name == name


@pytest.mark.parametrize("name", BUILTIN)
def test_file_hash_is_sha256_of_the_bytes(name):
    data = resources.files("mhaudit.weak_supervision.lexicons").joinpath(f"{name}.toml").read_bytes()
    assert Lexicon.load(name).sha256 == hashlib.sha256(data).hexdigest()


def test_load_by_path_records_its_own_hash(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text('[lexicon]\nname = "tiny"\nversion = "0.1"\n[categories.a]\nterms = ["want to die"]\n')
    lex = Lexicon.load(p)
    assert lex.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert Lexicon.load(str(p)).sha256 == lex.sha256
    assert lex.sha256 != Lexicon.load("si").sha256


def test_one_compiled_regex_for_the_whole_lexicon(mh):
    assert isinstance(mh.pattern, re.Pattern)
    # longest terms first in the alternation
    assert mh.pattern.pattern.index("panic\\s+attacks") < mh.pattern.pattern.index("panic\\s+attack|")


# -------------------------------------------------------------------------------------- matching
def test_curly_and_other_apostrophes(mh, si):
    for apo in ("'", "\u2019", "\u2018", "\u02bc"):
        assert terms(mh, f"i can{apo}t sleep again") == ["can't sleep"]
        assert terms(si, f"I{apo}m a burden to all of them") == ["i'm a burden"]


def test_apostrophe_less_variant_only_when_listed(mh, si):
    assert terms(mh, "cant sleep lol") == ["cant sleep"]  # listed explicitly
    assert mh.terms["cant sleep"] == mh.terms["can't sleep"] == "insomnia"
    assert terms(si, "i dont wanna be here") == []  # "dont wanna ..." is not listed


def test_multi_word_phrases_across_whitespace_runs_and_line_breaks(si, mh):
    assert terms(si, "i just want\nto   die") == ["want to die"]
    assert terms(si, "KILL\t\tMYSELF") == ["kill myself"]
    assert terms(mh, "another panic\r\n attack today") == ["panic attack"]
    assert terms(si, "wantto die") == []  # a space in the term needs whitespace in the text


def test_word_boundaries_reject_near_misses(si, mh):
    near_misses_si = [
        "on a diet",
        "i studied all night",
        "my skill myselfie",
        "the kmsq code",
        "hopelessly romantic",
        "selfharmony",
        "suicides squad",
    ]
    for text in near_misses_si:
        assert si.match(text) == [], text
        assert not si.matches_any(text), text
    near_misses_mh = [
        "sleepover at my house",
        "she panicked and ran",
        "panicky",
        "therapists agree",
        "anxiously waiting",
        "not depressing at all",
        "9880 followers",
        "unanxious",
    ]
    for text in near_misses_mh:
        assert mh.match(text) == [], text
        assert not mh.matches_any(text), text


def test_no_stemming_inflections_only_when_listed(mh):
    assert terms(mh, "I'm panicking") == ["panicking"]
    assert terms(mh, "I panicked") == []


def test_uppercase_and_mixed_case(si, mh):
    assert terms(si, "I WANT TO DIE") == ["want to die"]
    assert terms(mh, "My ThErApIsT said") == ["my therapist"]


def test_adjacent_punctuation_and_emoji(si, mh):
    assert terms(si, "suicide.") == ["suicide"]
    assert terms(mh, "(panic)") == ["panic"]
    assert terms(mh, "\"depressed\", 'anxious'!") == ["depressed", "anxious"]
    assert terms(mh, "😭can’t sleep😭") == ["can't sleep"]
    assert terms(si, "🙃 hopeless 🙃") == ["hopeless"]
    assert terms(mh, "#insomnia") == ["insomnia"]


def test_spans_index_the_original_text(mh):
    text = "Ugh…  I can\u2019t\n sleep, PANIC ATTACK again 😭"
    found = mh.match(text)
    assert [text[slice(*m.span)] for m in found] == ["can\u2019t\n sleep", "PANIC ATTACK"]
    assert found[0] == Match("can't sleep", "insomnia", found[0].span)


def test_longest_and_leftmost_wins(mh, si):
    assert terms(mh, "panic attacks every day") == ["panic attacks"]
    assert terms(mh, "my therapist") == ["my therapist"]
    assert terms(si, "everyone would be better off without me") == ["everyone would be better off"]


def test_category_assignment(si, mh):
    assert si.categories("I want to die, there's no way out and I'm a burden") == EXPECTED["si"]
    assert si.categories("nothing to live for") == {"hopelessness"}
    assert mh.categories("so depressed, anxious, panic attack, can't sleep, need a therapist") == EXPECTED["mh"]
    assert mh.categories("had a lovely day at the beach") == set()
    assert [m.category for m in mh.match("insomnia and 988")] == ["insomnia", "help_seeking"]


def test_matches_any_agrees_with_match(si, mh):
    texts = ["", "hello", "i want to die", "diet", "can’t   sleep", "sleepover", "my therapist"]
    for lex in (si, mh):
        for t in texts:
            assert lex.matches_any(t) == bool(lex.match(t))


def test_unicode_case_folding_still_names_the_term(si):
    # U+212A KELVIN SIGN matches "k" under re.IGNORECASE; the term is still recovered
    assert terms(si, "\u212aill myself") == ["kill myself"]


# ------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "body, msg",
    [
        ("not toml [", "not a valid"),
        ('[lexicon]\nname = "x"\nversion = "1"\n', "no categories"),
        ('[lexicon]\nname = "x"\nversion = "1"\n[categories.a]\nterms = []\n', "no terms"),
        ('[lexicon]\nname = "x"\n[categories.a]\nterms = ["a"]\n', "'version'"),
        (
            '[lexicon]\nname = "x"\nversion = "1"\n[categories.a]\nterms = ["die"]\n[categories.b]\nterms = ["DIE"]\n',
            "listed twice",
        ),
        ('[lexicon]\nname = "x"\nversion = "1"\n[categories.a]\nterms = ["(panic"]\n', "begin and end"),
        ('[lexicon]\nname = "x"\nversion = "1"\n[categories.a]\nterms = [3]\n', "non-empty strings"),
        ('[lexicon]\nname = "x"\nversion = "1"\n[categories.a]\nwords = ["a"]\n', "'terms' list"),
    ],
)
def test_malformed_lexicon_is_a_clear_input_error(tmp_path, body, msg):
    p = tmp_path / "bad.toml"
    p.write_text(body)
    with pytest.raises(InputError, match=re.escape(msg)):
        Lexicon.load(p)


def test_missing_file_names_the_builtins(tmp_path):
    with pytest.raises(InputError, match="built-in lexicons are 'si', 'mh'"):
        Lexicon.load(tmp_path / "nope.toml")
