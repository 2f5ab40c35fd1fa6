"""tasks/dedup_titles.py: clustering rules, tables, rejects and the probe."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

import tasks.dedup_titles as dd
from kitab.core.schemas import to_arrow
from tasks.dedup_titles import Variant, cluster_titles, dedup_probe, dedup_titles, fuzzy_compatible
from tasks.text import match_key, split_title_year


def clusters_of(*titles: str) -> list[set[str]]:
    """The clusters of ``titles`` (one author) as sets of raw titles, order-free."""
    found = cluster_titles([Variant(f"/works/OL{i}W", t) for i, t in enumerate(titles)])
    return sorted(({v.title for v, _ in c.members} for c in found), key=sorted)


def same(*titles: str) -> bool:
    return len(clusters_of(*titles)) == 1


# --- subset rule -----------------------------------------------------------------------


def test_subset_links_main_title_to_subtitled_form() -> None:
    assert same("Gödel, Escher, Bach", "Gödel, Escher, Bach: An Eternal Golden Braid")
    assert same("Beloved", "Beloved: A Novel")  # one word is fine when it is the main title
    assert same("Emma", "Emma (Penguin Classics)")
    assert same("The Hobbit", "The Hobbit, or There and Back Again")


def test_subset_links_a_specific_bare_prefix() -> None:
    assert same("Godel Escher Bach", "Godel Escher Bach an Eternal Golden Braid")  # 3 content words
    assert same("Through the Looking-Glass", "Through the Looking-Glass, and What Alice Found There")


@pytest.mark.parametrize(
    ("short", "long"),
    [
        ("Jazz", "Jazz Age Stories"),  # a bare one-word title
        ("Dune", "Dune Messiah"),
        ("Dune", "Children of Dune"),  # not a prefix at all
        ("Toni Morrison", "Conversations with Toni Morrison"),  # the author's name
        ("Pride and Prejudice", "Pride and Prejudice and Zombies"),  # two content words
        ("The Cat in the Hat", "The Cat in the Hat Comes Back"),
        ("It", "It Ends With Us"),
    ],
)
def test_subset_guard_keeps_unspecific_prefixes_apart(short: str, long: str) -> None:
    assert not same(short, long)


def test_ambiguous_shorter_form_links_to_none() -> None:
    # "Dune" is the main title of two different books: it can be neither of them.
    assert clusters_of("Dune", "Dune: House Atreides", "Dune: House Harkonnen") == [
        {"Dune"},
        {"Dune: House Atreides"},
        {"Dune: House Harkonnen"},
    ]
    # ...but nested longer forms of one book are not ambiguous.
    assert same(
        "Gödel, Escher, Bach",
        "Gödel, Escher, Bach: An Eternal Golden Braid",
        "Gödel, Escher, Bach: An Eternal Golden Braid (20th anniversary edition)",
    )
    # ...nor are two longer forms already linked as one book.
    assert same("Dune", "Dune: Deluxe Edition", "Dune - Deluxe Edition")


def test_ambiguity_is_decided_per_component_of_shorter_forms() -> None:
    # "Harry Potter" and "Harry Poter" are one title (a fuzzy link): each alone has one longer
    # form, but together they would join two different books, so neither links to them.
    titles = ["Harry Potter", "Harry Potter: Chamber of Secrets", "Harry Poter", "Harry Poter: Prisoner of Azkaban"]
    expected = [
        {"Harry Potter", "Harry Poter"},
        {"Harry Poter: Prisoner of Azkaban"},
        {"Harry Potter: Chamber of Secrets"},
    ]
    assert clusters_of(*titles) == expected
    assert clusters_of(*reversed(titles)) == expected
    # The same with an exact link (two raw spellings of one key) instead of a fuzzy one.
    assert clusters_of(
        "Harry Potter", "HARRY POTTER!", "Harry Potter: Chamber of Secrets", "HARRY POTTER!: Prisoner of Azkaban"
    ) == [
        {"Harry Potter", "HARRY POTTER!"},
        {"HARRY POTTER!: Prisoner of Azkaban"},
        {"Harry Potter: Chamber of Secrets"},
    ]
    # A component whose longer forms are one book still links to them all.
    assert same(
        "The Colour of Magic",
        "The Color of Magic",
        "The Colour of Magic: A Discworld Novel",
        "The Color of Magic: A Discworld Novel",
    )


# --- fuzzy rule --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The Colour of Magic", "The Color of Magic"),
        ("Journey to the Centre of the Earth", "A Journey to the Center of the Earth"),  # swap = one edit
        ("The Picture of Dorian Gray", "The Picture of Dorian Grey"),
        ("Wuthering Heights", "Wuthering Hights"),
        ("Tar Baby", "Tarbaby"),
        ("Freedom or Death", "Freedom and Death"),  # only function words differ
        ("The Left Hand of Darkness", "Left Hand of Darkness, The"),
    ],
)
def test_fuzzy_links_spelling_variants(a: str, b: str) -> None:
    assert fuzz.ratio(match_key(a), match_key(b)) >= dd.FUZZY_MIN_RATIO or match_key(a) == match_key(b)
    assert same(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Twisted Love", "Twisted Lies"),
        ("Little Women", "Little Men"),
        ("Ramona and Her Father", "Ramona and Her Mother"),
        ("Richard II", "Richard III"),
        ("Henry IV, Part 1", "Henry IV, Part 2"),
        ("Goodnight Moon", "Goodnight Moon 123"),
        ("Chicken Soup for the Soul", "Chicken Soup for the Teenage Soul"),  # a word only added
        ("Henry VI", "Henry VIII"),
        ("Louis XIV", "Louis XV"),
        ("Collected Works, Volume I: Poems", "Collected Works, Volume V: Poems"),  # lone numeral after "volume"
    ],
)
def test_fuzzy_guard_keeps_similar_different_books_apart(a: str, b: str) -> None:
    assert fuzz.ratio(match_key(a), match_key(b)) >= dd.FUZZY_MIN_RATIO  # the paper's rule would merge them
    assert not fuzzy_compatible(match_key(a), match_key(b))
    assert not same(a, b)


def test_roman_numerals_are_only_sequel_and_part_numbers() -> None:
    # l, c, d, m spell words, and a lone i/v/x mid-title is the pronoun, "versus" or a letter.
    assert dd._numbers("mix liv dix civ mid cd dc i v love".split()) == []
    assert dd._numbers(["i", "robot"]) == [] and dd._numbers(["kramer", "v", "kramer"]) == []
    # ii..xxxix anywhere; a lone i/v/x as the last word or after part/book/volume/chapter/episode.
    assert dd._numbers(["henry", "viii"]) == ["viii"] and dd._numbers(["louis", "xiv", "letters"]) == ["xiv"]
    assert dd._numbers(["henry", "v"]) == ["v"] and dd._numbers(["part", "i", "fellowship"]) == ["i"]
    assert dd._numbers(["star", "wars", "episode", "iv", "2"]) == ["2", "iv"]
    assert not same("Rocky II", "Rocky") and not same("Psycho", "Psycho II")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Mix Tape", "Mixtape"),  # "mix" is not 1009
        ("Civ Guide", "Civguide"),  # nor "civ" 104
        ("I Am Malala", "Iam Malala"),  # nor the pronoun 1
    ],
)
def test_words_that_spell_roman_numerals_do_not_block_fuzzy_links(a: str, b: str) -> None:
    assert fuzzy_compatible(match_key(a), match_key(b))
    assert same(a, b)


def test_a_substituted_word_is_another_book() -> None:
    assert not same("It Ends With Us", "It Starts with Us")
    assert not fuzzy_compatible("it ends with us", "it starts with us")


def test_fuzzy_pairs_blocks_match_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    words = ["love", "lover", "dark", "night", "nights", "tower", "towers", "city", "of", "bones", "ashes"]
    keys = sorted({" ".join(rng.choices(words, k=rng.randint(1, 4))) for _ in range(120)})
    expected = {
        (i, j)
        for i in range(len(keys))
        for j in range(i + 1, len(keys))
        if fuzz.ratio(keys[i], keys[j]) >= dd.FUZZY_MIN_RATIO and fuzzy_compatible(keys[i], keys[j])
    }
    monkeypatch.setattr(dd, "_CDIST_BLOCK", 7)  # many blocks, including a ragged last one
    assert set(dd._fuzzy_pairs(keys)) == expected


# --- clusters: canonical title, year, links -------------------------------------------


def test_cluster_canonical_year_and_links() -> None:
    variants = [
        Variant("/works/OL3W", "Gödel, Escher, Bach: An Eternal Golden Braid", 1980, editions=40),
        Variant("/works/OL1W", "Gödel, Escher, Bach", 1979, editions=12),
        Variant("/works/OL2W", "Godel, Escher, Bach", None, editions=1),
        Variant("/works/OL4W", "Gödel, Escher, Bach: An Eternal Golden Braid", 1999, editions=2),
    ]
    [cluster] = cluster_titles(variants)
    assert cluster.canonical.work_key == "/works/OL3W"  # most editions wins over shortest
    assert cluster.first_year == 1979
    assert dict((v.work_key, link) for v, link in cluster.members) == {
        "/works/OL1W": "exact_key",
        "/works/OL2W": "exact_key",
        "/works/OL3W": "self",
        "/works/OL4W": "exact_key",
    }


def test_canonical_prefers_the_most_frequent_spelling() -> None:
    variants = [
        Variant("/works/OL1W", "Harry Poter"),
        Variant("/works/OL2W", "Harry Potter"),
        Variant("/works/OL3W", "Harry Potter."),
    ]
    [cluster] = cluster_titles(variants)
    assert cluster.canonical.title == "Harry Potter"  # two works spell it so; the typo is shorter
    assert dict((v.work_key, link) for v, link in cluster.members) == {
        "/works/OL1W": "fuzzy",
        "/works/OL2W": "self",
        "/works/OL3W": "exact_key",
    }
    # Edition counts still come first.
    [cluster] = cluster_titles([*variants[1:], Variant("/works/OL1W", "Harry Poter", editions=5)])
    assert cluster.canonical.title == "Harry Poter"


def test_canonical_ties_go_to_the_shortest_title() -> None:
    [cluster] = cluster_titles([Variant("/works/OL1W", "Beloved: A Novel"), Variant("/works/OL2W", "Beloved")])
    assert cluster.canonical.title == "Beloved"
    assert [link for _, link in cluster.members] == ["subset", "self"]
    assert cluster.first_year is None


TITLE_POOL = [
    "Gödel, Escher, Bach",
    "Gödel, Escher, Bach: An Eternal Golden Braid",
    "Godel Escher Bach",
    "Dune",
    "Dune Messiah",
    "Dune: House Atreides",
    "Dune: House Harkonnen",
    "Dune (40th Anniversary Edition)",
    "Jazz",
    "Jazz Age Stories",
    "Beloved",
    "Beloved: A Novel",
    "BELOVED.",
    "The Colour of Magic",
    "The Color of Magic",
    "Nineteen Eighty-Four",
    "1984",
    "It Ends With Us",
    "It Starts with Us",
    "Little Women",
    "Little Men",
    "Twisted Love",
    "Twisted Lies",
    "Harry Potter",
    "",
    "Harry Poter",
    "Harry Potter: Chamber of Secrets",
    "Harry Poter: Prisoner of Azkaban",
    "HARRY POTTER!",
    "Richard II",
    "Richard III",
    "Mix Tape",
    "Mixtape",
]


@st.composite
def author_titles(draw) -> list[Variant]:
    picks = draw(st.lists(st.sampled_from(TITLE_POOL), min_size=1, max_size=14))
    years = draw(st.lists(st.one_of(st.none(), st.integers(1900, 2020)), min_size=len(picks), max_size=len(picks)))
    eds = draw(st.lists(st.integers(0, 3), min_size=len(picks), max_size=len(picks)))
    return [Variant(f"/works/OL{i}W", t, y, e) for i, (t, y, e) in enumerate(zip(picks, years, eds))]


def _as_sets(clusters) -> set:
    return {
        (
            frozenset(v.work_key for v, _ in c.members),
            c.canonical.work_key,
            c.first_year,
            frozenset((v.work_key, link) for v, link in c.members),
        )
        for c in clusters
    }


@settings(max_examples=150, deadline=None)
@given(author_titles(), st.randoms(use_true_random=False))
def test_clustering_is_invariant_to_input_order(variants: list[Variant], rnd: random.Random) -> None:
    shuffled = list(variants)
    rnd.shuffle(shuffled)
    assert _as_sets(cluster_titles(variants)) == _as_sets(cluster_titles(shuffled))


@settings(max_examples=150, deadline=None)
@given(author_titles())
def test_first_year_is_min_of_members_and_each_variant_in_one_cluster(variants: list[Variant]) -> None:
    clusters = cluster_titles(variants)
    members = [v for c in clusters for v, _ in c.members]
    assert sorted(v.work_key for v in members) == sorted(v.work_key for v in variants)
    for c in clusters:
        years = [v.year for v, _ in c.members if v.year is not None]
        assert c.first_year == (min(years) if years else None)
        assert c.canonical in [v for v, _ in c.members]


# --- the stage -------------------------------------------------------------------------


def clean_row(qid: str, n: int, title: str, year: int | None = None, editions: int = 1) -> dict:
    return {"author_qid": qid, "work_key": f"/works/OL{n}W", "title": title, "year": year, "edition_count": editions}


AUTHORS = [
    {"qid": "Q1", "name": "Toni Morrison", "match_method": "p648"},
    {"qid": "Q2", "name": "Few Books", "match_method": "name_birth_year"},
    {"qid": "Q3", "name": "No Works Left", "match_method": "p648"},
    {"qid": "Q4", "name": "Never Matched", "match_method": "unmatched"},
]
MORRISON = [
    ("The Bluest Eye", 60),
    ("Sula", 40),
    ("Song of Solomon", 50),
    ("Tar Baby", 30),
    ("Tarbaby", 2),
    ("Beloved", 90),
    ("Beloved: A Novel", 3),
    ("Jazz", 20),
]


def morrison_rows() -> list[dict]:
    return [clean_row("Q1", 10 + i, t, 1970 + i, editions) for i, (t, editions) in enumerate(MORRISON)]


def test_dedup_titles_tables_ids_and_rejects() -> None:
    rows = morrison_rows()
    rows += [clean_row("Q2", 100 + i, t) for i, t in enumerate(["One", "Two", "Two!", "Three", "Four"])]
    result = dedup_titles(rows, AUTHORS)
    books, variants = result.tables["books"], result.tables["title_variants"]

    assert [b["canonical_title"] for b in books] == [
        "The Bluest Eye",
        "Sula",
        "Song of Solomon",
        "Tar Baby",
        "Beloved",
        "Jazz",
    ]
    beloved = next(b for b in books if b["canonical_title"] == "Beloved")
    assert beloved == {
        "book_id": "Q1:OL15W",
        "author_qid": "Q1",
        "canonical_title": "Beloved",
        "first_year": 1975,
        "n_variants": 2,
        "variant_titles": ["Beloved", "Beloved: A Novel"],
    }
    assert {v["variant_id"]: v["book_id"] for v in variants if v["book_id"] == "Q1:OL13W"} == {
        "Q1:OL13W": "Q1:OL13W",
        "Q1:OL14W": "Q1:OL13W",
    }  # Tar Baby / Tarbaby
    assert len(variants) == len(MORRISON)
    assert sum(b["n_variants"] for b in books) == len(variants)

    # Q2 has 4 books (Two / Two! are one) -> author and each work rejected; Q3 has none; Q4 was rejected upstream.
    by_kind = {(r["record_kind"], r["record_id"]) for r in result.rejects}
    assert by_kind == {("author", "Q2"), ("author", "Q3")} | {("work", f"/works/OL{n}W") for n in range(100, 105)}
    assert {r["reason"] for r in result.rejects} == {"author_below_min_books"}
    assert json.loads(next(r for r in result.rejects if r["record_id"] == "Q2")["evidence"]) == {
        "min_books": 5,
        "n_books": 4,
        "n_works": 5,
    }
    assert result.stats["authors_kept"] == 1 and result.stats["authors_rejected"] == 2

    # The rows fit the committed schemas.
    assert to_arrow("books", books).num_rows == len(books)
    assert to_arrow("title_variants", variants).num_rows == len(variants)
    assert to_arrow("rejects", result.rejects).num_rows == len(result.rejects)


def test_dedup_titles_output_is_sorted_and_deterministic() -> None:
    rows = morrison_rows()
    a = dedup_titles(rows, AUTHORS[:1])
    b = dedup_titles(list(reversed(rows)), AUTHORS[:1])
    assert a.tables == b.tables
    assert [r["book_id"] for r in a.tables["books"]] == sorted(r["book_id"] for r in a.tables["books"])


# --- the probe -------------------------------------------------------------------------


def test_split_title_year() -> None:
    assert split_title_year("Beloved (1987)\n") == ("Beloved", 1987)
    assert split_title_year("  1984  ") == ("1984", None)
    assert split_title_year("Catch-22 (a novel)") == ("Catch-22 (a novel)", None)


def test_dedup_probe_prints_clusters_as_json_lines() -> None:
    lines = [
        "Gödel, Escher, Bach (1979)",
        "",
        "Gödel, Escher, Bach: An Eternal Golden Braid (1980)",
        "Jazz (1992)",
        "Jazz Age Stories",
        "1984 (1950)",
        "Nineteen Eighty-Four (1949)",
    ]
    out = [json.loads(line) for line in dedup_probe(lines)]
    assert out == [
        {"canonical": "1984", "first_year": 1949, "variants": ["1984", "Nineteen Eighty-Four"]},
        {
            "canonical": "Gödel, Escher, Bach",
            "first_year": 1979,
            "variants": ["Gödel, Escher, Bach", "Gödel, Escher, Bach: An Eternal Golden Braid"],
        },
        {"canonical": "Jazz", "first_year": 1992, "variants": ["Jazz"]},
        {"canonical": "Jazz Age Stories", "first_year": None, "variants": ["Jazz Age Stories"]},
    ]
    assert list(dedup_probe(reversed(lines))) == list(dedup_probe(lines))
    assert list(dedup_probe([])) == []


def test_dedup_probe_skips_titles_with_an_empty_matching_key() -> None:
    # clean_books rejects these (empty_title); the probe must not make them one junk book.
    out = [json.loads(line) for line in dedup_probe(["!!!", "???", "Beloved (1987)", " ... (1990)", "Beloved!"])]
    assert out == [{"canonical": "Beloved", "first_year": 1987, "variants": ["Beloved", "Beloved!"]}]
    assert list(dedup_probe(["!!!", "???"])) == []


@pytest.mark.timeout(60)  # a hang guard, not a speed target: this took 166 s when it was quadratic
def test_one_megabyte_title_is_clustered_in_linear_time():
    """Every prefix of a long key used to be joined and looked up, and cdist compared the key
    with itself; now only prefixes as long as some key are, and a key no other key can reach
    80 with (lengths too far apart) is not compared."""
    long = "Love in Paris " * 75_000
    out = [json.loads(line) for line in dedup_probe([long, "Love in Paris (1990)", "Jazz (1992)", "Jaz (1993)"])]
    assert sorted(c["variants"] for c in out) == [
        ["Jaz", "Jazz"],
        ["Love in Paris"],
        [long.strip()],
    ]  # fuzzy still links


def test_keys_out_of_ratio_reach_are_not_compared_but_pairs_in_reach_are():
    keys = ["a" * 10, "a" * 14, "a" * 16, "b" * 30]
    assert dd._may_reach_ratio(keys) == [0, 1, 2]  # 30 is over 16 / 0.6: no partner can reach 80
    assert all(fuzz.ratio(keys[3], k) < dd.FUZZY_MIN_RATIO for k in keys[:3])
