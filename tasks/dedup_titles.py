"""Stage ``dedup_titles``: cluster each author's Open Library titles into books.

Pure functions; the rules are explained in docs/dedup.md. Two titles of one author are linked
when (union-find takes the transitive closure, so the result does not depend on input order):

- **exact_key**: they share a ``match_key`` (tasks/text.py);
- **fuzzy**: ``fuzz.ratio`` of the keys is >= 80 (the paper's threshold), the keys carry the
  same numbers (digits, and Roman numerals as ``_numbers`` defines them: ii-xxxix spelled
  with i/v/x, a lone i/v/x only as the last word or after part/book/volume/chapter/episode),
  and the words that differ are a misspelling of each other: one edit (insert, delete,
  substitute, swap two adjacent letters) per 8 letters, at least one. "colour"/"color",
  "centre"/"center" link; "It Ends with Us"/"It Starts with Us", "Twisted Love"/"Twisted
  Lies", "Little Women"/"Little Men", "Richard II"/"Richard III" do not;
- **subset**: the shorter title is the longer one's main title (the part before a subtitle
  separator: "Gödel, Escher, Bach" / "Gödel, Escher, Bach: An Eternal Golden Braid"), or, with
  no separator, a prefix with at least three content words. One or two content words followed
  by more words ("Jazz" / "Jazz Age Stories", "Dune" / "Dune Messiah", "The Cat in the Hat" /
  "The Cat in the Hat Comes Back") are not a shorter form. A shorter form that would join two
  longer titles that are not otherwise the same book ("Dune" / "Dune: House Atreides" /
  "Dune: House Harkonnen") is ambiguous and links to none. This is decided per exact+fuzzy
  component of shorter forms: "Harry Potter" and its misspelling "Harry Poter" are one shorter
  form, so with "Harry Potter: Chamber of Secrets" and "Harry Poter: Prisoner of Azkaban" none
  of the three links to the other books.

Canonical title of a cluster: most editions, then the most frequent spelling (the matching key
shared by the most members), then the shortest raw title, then the earliest year.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from kitab.core import jsonl
from kitab.core.stages import DEDUP_TITLES
from tasks.base import StageResult, reject
from tasks.text import main_title, match_key, split_title_year

STAGE = DEDUP_TITLES  # rejects.stage of what this stage drops (kitab/core/stages.py)
FUZZY_MIN_RATIO = 80  # the paper's fuzzywuzzy threshold
LETTERS_PER_EDIT = 8  # a misspelling: one edit per 8 letters of the differing words, at least one
SUBSET_MIN_CONTENT_WORDS = 3  # a bare prefix this specific is the same book ("Harry Potter" is not)
_CDIST_BLOCK = 1024  # rows per cdist call: bounds the score matrix at 1024 x n bytes
# Function words: adding or dropping one never makes another book, and they do not make a
# prefix more specific.
_FUNCTION_WORDS = frozenset({"a", "an", "the", "and", "of", "or", "in", "on", "to", "for", "by", "at"})
# Roman numerals that mark a sequel, part or regnal number (see _numbers): 1-39 in standard
# form, spelled with i, v and x only. With l, c, d, m the "numerals" are mostly words or
# abbreviations (mix, liv, dix, civ, mid, cd, dc, mc), and numbers >= 40 are written in digits.
_ROMAN = re.compile(r"(?=[ivx]+$)x{0,3}(ix|iv|v?i{0,3})$")
# A lone i, v or x is a numeral only in a numeral's position: the last word ("Rocky V", "Henry
# V", "Part I") or after one of these; elsewhere it is the pronoun I, "v" for versus, a letter.
_NUMERAL_MARKERS = frozenset({"part", "book", "volume", "chapter", "episode"})
LINKS = ("self", "exact_key", "fuzzy", "subset")  # strongest first


@dataclass(frozen=True)
class Variant:
    """One raw title of one author: an Open Library work, or a probe line."""

    work_key: str
    title: str
    year: int | None = None
    editions: int = 0


@dataclass(frozen=True)
class Cluster:
    """One book: its members (with how each joined) sorted by work key."""

    canonical: Variant
    first_year: int | None
    members: tuple[tuple[Variant, str], ...]


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)


def _residue(tokens: list[str], other: list[str]) -> list[str]:
    """Content words of ``tokens`` not matched one-for-one by a word of ``other``, in order."""
    spare = Counter(other)
    out = []
    for tok in tokens:
        if spare[tok]:
            spare[tok] -= 1
        elif tok not in _FUNCTION_WORDS:
            out.append(tok)
    return out


def _numbers(tokens: list[str]) -> list[str]:
    """The numbers in a key's tokens, sorted: digits, and Roman numerals where they are numbers.

    "ii".."xxxix" count anywhere; a lone "i", "v" or "x" only as the last token or right after
    part/book/volume/chapter/episode (the numeral's places); Roman numerals with l, c, d, m never.
    """
    last = len(tokens) - 1
    return sorted(
        t
        for n, t in enumerate(tokens)
        if t.isdigit()
        or (_ROMAN.match(t) and (len(t) > 1 or n == last or (n > 0 and tokens[n - 1] in _NUMERAL_MARKERS)))
    )


def fuzzy_compatible(key_a: str, key_b: str) -> bool:
    """Whether two keys that are >= 80 similar differ only by spelling (the fuzzy guard)."""
    ta, tb = key_a.split(), key_b.split()
    if _numbers(ta) != _numbers(tb):
        return False  # "Book 2" is not "Book 3", "Henry IV" is not "Henry V"
    ra, rb = " ".join(_residue(ta, tb)), " ".join(_residue(tb, ta))
    if not ra or not rb:
        # Same content words (reordered, or function words added): one book. Words only
        # added on one side are a shorter/longer form, which the subset rule decides.
        return not ra and not rb
    return OSA.distance(ra, rb) <= max(1, max(len(ra), len(rb)) // LETTERS_PER_EDIT)


def _may_reach_ratio(keys: list[str]) -> list[int]:
    """Indices of the keys with another key of a length that can reach FUZZY_MIN_RATIO.

    ``fuzz.ratio`` is at most 200 * shorter / (shorter + longer), so a ratio of 80 needs the
    shorter key to be >= 2/3 of the longer (0.6 here, a margin for rounding). A key with no
    such partner is never fuzzy-linked; leaving it out keeps a very long title from costing
    a quadratic comparison with itself (cdist scores the diagonal too)."""
    lengths = sorted(len(k) for k in keys)
    return [
        i for i, k in enumerate(keys) if bisect_right(lengths, len(k) / 0.6) - bisect_left(lengths, len(k) * 0.6) > 1
    ]


def _fuzzy_pairs(keys: list[str]) -> Iterator[tuple[int, int]]:
    """Index pairs i < j of distinct keys with ratio >= 80 that pass the fuzzy guard."""
    at = _may_reach_ratio(keys)
    compared = [keys[i] for i in at]
    for start in range(0, len(compared), _CDIST_BLOCK):
        scores = process.cdist(
            compared[start : start + _CDIST_BLOCK],
            compared[start:],
            scorer=fuzz.ratio,
            score_cutoff=FUZZY_MIN_RATIO,
            dtype=np.uint8,
        )
        for r, c in zip(*(axis.tolist() for axis in scores.nonzero())):
            i, j = at[start + r], at[start + c]
            if i < j and fuzzy_compatible(keys[i], keys[j]):
                yield i, j


def _longer_forms(keys: list[str], raw_titles: list[set[str]]) -> dict[int, set[int]]:
    """For each key index, the indices of keys it is a shorter form of (hash lookups, no n²)."""
    index = {k: i for i, k in enumerate(keys)}
    lengths = {len(k) for k in keys}
    longer: dict[int, set[int]] = defaultdict(set)
    for li, key in enumerate(keys):
        tokens = key.split()  # a key's tokens are joined by single spaces: a prefix is key[:end]
        content = end = 0
        for n in range(1, len(tokens)):
            content += tokens[n - 1] not in _FUNCTION_WORDS
            end += len(tokens[n - 1]) + (n > 1)
            # Only a prefix as long as some key can be one: slicing at those lengths alone keeps
            # a very long title linear (slicing every prefix was quadratic in its length).
            if content >= SUBSET_MIN_CONTENT_WORDS and end in lengths:
                si = index.get(key[:end])
                if si is not None:
                    longer[si].add(li)
        for raw in raw_titles[li]:
            main = main_title(raw)
            si = index.get(match_key(main)) if main and main != raw else None
            if si is not None and si != li:
                longer[si].add(li)
    return longer


def _canonical_rank(v: Variant, spelling_count: int) -> tuple:
    """Canonical title: the form with the most editions (what readers and models know), then the
    most frequent spelling (``spelling_count``: members sharing its matching key; a one-off typo
    loses to the spelling most works use), then the shortest (least subtitle/edition clutter),
    then the earliest; the rest only break ties."""
    return (-v.editions, -spelling_count, len(v.title), v.year is None, v.year or 0, v.title, v.work_key)


def cluster_titles(variants: Sequence[Variant]) -> list[Cluster]:
    """Cluster one author's titles into books; sorted by the smallest member work key."""
    variant_keys = [match_key(v.title) for v in variants]
    keys = sorted(set(variant_keys))
    key_index = {k: i for i, k in enumerate(keys)}
    key_of = [key_index[k] for k in variant_keys]  # variant position -> key index
    raw_titles: list[set[str]] = [set() for _ in keys]
    for v, ki in zip(variants, key_of):
        raw_titles[ki].add(v.title)
    key_size = Counter(key_of)

    uf = _UnionFind(len(keys))
    key_links: list[set[str]] = [set() for _ in keys]
    for i, j in _fuzzy_pairs(keys):
        uf.union(i, j)
        key_links[i].add("fuzzy")
        key_links[j].add("fuzzy")

    # Subset links are all decided against the exact+fuzzy clusters before any is applied,
    # so the decisions (and the result) do not depend on the order of the titles. Shorter
    # forms in one exact+fuzzy component are one title (spellings of it), so the ambiguity
    # guard looks at the longer forms of the whole component, and accepts or rejects them all.
    longer = _longer_forms(keys, raw_titles)
    by_component: dict[int, list[int]] = defaultdict(list)
    for s in sorted(longer):
        by_component[uf.find(s)].append(s)
    accepted = [
        shorter
        for shorter in by_component.values()
        if all(
            uf.find(a) == uf.find(b) or b in longer.get(a, ()) or a in longer.get(b, ())
            for a, b in combinations(sorted(set().union(*(longer[s] for s in shorter))), 2)
        )
    ]
    for shorter in accepted:
        for s in shorter:
            for li in longer[s]:
                uf.union(s, li)
                key_links[li].add("subset")
            key_links[s].add("subset")

    groups: dict[int, list[int]] = defaultdict(list)
    for pos, ki in enumerate(key_of):
        groups[uf.find(ki)].append(pos)
    clusters = []
    for positions in groups.values():
        if len(positions) == 1:  # most books have a single title: skip the bookkeeping
            v = variants[positions[0]]
            clusters.append(Cluster(v, v.year, ((v, "self"),)))
            continue
        canonical = min(positions, key=lambda p: _canonical_rank(variants[p], key_size[key_of[p]]))
        years = [variants[p].year for p in positions if variants[p].year is not None]
        linked = []
        for p in sorted(positions, key=lambda p: (variants[p].work_key, variants[p].title)):
            ki = key_of[p]
            kinds = key_links[ki] | ({"exact_key"} if key_size[ki] > 1 else set())
            linked.append((variants[p], "self" if p == canonical else min(kinds, key=LINKS.index)))
        clusters.append(Cluster(variants[canonical], min(years, default=None), tuple(linked)))
    return sorted(clusters, key=lambda c: (c.members[0][0].work_key, c.members[0][0].title))


PROVENANCE_FROM_CLEAN = ("year_raw", "year_issue", "lang_detector", "lang_label", "lang_confidence", "lang_rule")


def _bare_key(work_key: str) -> str:
    return work_key.removeprefix("/works/")


def dedup_titles(works_clean: list[dict], authors: list[dict], *, min_books: int = 5) -> StageResult:
    """Tables ``books`` and ``title_variants``; authors with < ``min_books`` books and their works to rejects.

    Every ``works_clean`` row ends in exactly one of ``title_variants`` or ``rejects``.
    Authors that an earlier stage left unmatched (``match_method == "unmatched"``) were already
    rejected there and are not reported again unless they have works.
    """
    by_author: dict[str, list[dict]] = defaultdict(list)
    for row in works_clean:
        by_author[row["author_qid"]].append(row)
    qids = sorted(set(by_author) | {a["qid"] for a in authors if a.get("match_method") != "unmatched"})

    books: list[dict] = []
    variants: list[dict] = []
    rejects: list[dict] = []
    links: Counter = Counter()
    for qid in qids:
        rows = sorted(by_author.get(qid, []), key=lambda r: r["work_key"])
        clusters = cluster_titles(
            [Variant(r["work_key"], r["title"], r.get("year"), r.get("edition_count") or 0) for r in rows]
        )
        if len(clusters) < min_books:
            evidence = {"n_books": len(clusters), "n_works": len(rows), "min_books": min_books}
            rejects.append(reject(STAGE, "author_below_min_books", "author", qid, author_qid=qid, evidence=evidence))
            rejects.extend(
                reject(
                    STAGE,
                    "author_below_min_books",
                    "work",
                    r["work_key"],
                    author_qid=qid,
                    title=r["title"],
                    evidence=evidence,
                )
                for r in rows
            )
            continue
        by_key = {r["work_key"]: r for r in rows}
        for cluster in clusters:
            book_id = f"{qid}:{_bare_key(cluster.members[0][0].work_key)}"
            books.append(
                {
                    "book_id": book_id,
                    "author_qid": qid,
                    "canonical_title": cluster.canonical.title,
                    "first_year": cluster.first_year,
                    "n_variants": len(cluster.members),
                    "variant_titles": sorted({v.title for v, _ in cluster.members}),
                }
            )
            for v, link in cluster.members:
                links[link] += 1
                variants.append(
                    {
                        "variant_id": f"{qid}:{_bare_key(v.work_key)}",
                        "book_id": book_id,
                        "author_qid": qid,
                        "work_key": v.work_key,
                        "title": v.title,
                        "match_key": match_key(v.title),
                        "year": v.year,
                        "link": link,
                        # why the year is what it is, and how the language was decided (clean_books)
                        **{k: by_key[v.work_key].get(k) for k in PROVENANCE_FROM_CLEAN},
                    }
                )
    stats = {
        "works_in": len(works_clean),
        "books": len(books),
        "title_variants": len(variants),
        "authors_kept": len({b["author_qid"] for b in books}),
        "authors_rejected": sum(r["record_kind"] == "author" for r in rejects),
        "works_rejected": sum(r["record_kind"] == "work" for r in rejects),
        "links": dict(sorted(links.items())),
    }
    return StageResult(tables={"books": books, "title_variants": variants}, rejects=rejects, stats=stats)


def dedup_probe(lines: Iterable[str]) -> Iterator[str]:
    """``kitab dedup``: one author's titles (one per line, optional ``(YYYY)``) -> clusters as JSON lines.

    Blank lines, and lines whose title has an empty matching key (only punctuation: "!!!",
    "???"), are skipped: clean_books rejects such titles (``empty_title``) before the pipeline
    clusters them, and clustered together they would make one junk book. Without edition
    counts the canonical title is the most frequent spelling, then the shortest. Clusters come
    out chronologically (undated last), then by title.
    """
    parsed = (split_title_year(line) for line in lines)
    variants = [
        Variant(f"line:{n}", title, year) for n, (title, year) in enumerate(parsed) if title and match_key(title)
    ]
    clusters = cluster_titles(variants)
    clusters.sort(key=lambda c: (c.first_year is None, c.first_year or 0, c.canonical.title))
    for c in clusters:
        yield jsonl.dumps(
            {
                "canonical": c.canonical.title,
                "first_year": c.first_year,
                "variants": sorted({v.title for v, _ in c.members}),
            },
            ensure_ascii=False,
        )
