"""WikiData for ``--source dump``: the SPARQL queries of ``sql/sparql/`` answered by SQL
over the scanned triples, with the very answers of pyoxigraph over the N-Triples (the mirror's),
the same fingerprints and the same ``fetched_at``.

Semantics that are easy to get wrong, and are reproduced on purpose: an author's birth dates
are compared as ``xsd:dateTime`` values with time zones (a value without a zone is only "in" a
window if it is more than 14 hours inside it: kitab/sources/dates.py); a P569 whose ``YEAR()``
is an error (a plain string, an invalid date, an IRI) makes the author's ``MIN(YEAR(?birth))``
an error, so the author is dropped; ``xsd:integer`` values come back in canonical form
(``"07"`` -> ``"7"``); language tags are lower case."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from kitab.core.config import Settings
from kitab.sources.dump.sql import sql_list, sql_string
from kitab.sources.dump.store import open_store
from kitab.sources.http import Fetched, RequestCounter, fingerprint
from kitab.sources.queries import SQL_DIR, occupations, sparql, sparql_titles
from kitab.sources.snapshot.format import WD, WDT, XSD_INTEGER
from kitab.sources.wikidata import ENTITY, work_values

Q5 = WD + "Q5"


def _binding(kind: str, value: str, lang: str | None = None, datatype: str | None = None) -> dict:
    """One SPARQL JSON results value."""
    if kind == "bnode":
        return {"type": "bnode", "value": value.removeprefix("_:")}
    if kind == "uri":
        return {"type": "uri", "value": value}
    term = {"type": "literal", "value": value}
    if lang:
        term["xml:lang"] = lang
    elif datatype:
        term["datatype"] = datatype
    return term


def _integer(value: int) -> dict:
    return _binding("literal", str(value), datatype=XSD_INTEGER)


def _term_order(column: str) -> str:
    """SPARQL ORDER BY on terms: blank nodes before IRIs (all are one or the other here)."""
    return f"starts_with({column}, '_:') DESC, {column}"


def _drop_prefix(column, prefix: str):
    """``str.removeprefix`` on an Arrow string column (the prefixes here are ASCII)."""
    import pyarrow.compute as pc

    return pc.if_else(pc.starts_with(column, prefix), pc.utf8_slice_codeunits(column, len(prefix)), column)


def label_table_rows(found, ours: Collection[str] | None = None, crowd: int | None = None) -> list[dict]:
    """wd_work_labels rows (s, label, o, o_kind; in the query's order) -> ``works_with_labels``
    rows; with ``ours`` and ``crowd``, only those :func:`~kitab.sources.wikidata.narrow_crowded`
    keeps (that function is the reference: tests/test_crowded_labels.py), chosen in Arrow and
    NumPy: a crowded label's rows cost C, not a Python dict each."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    # a blank node's binding drops its _: (the work's always, the author's when it is a bnode)
    work = _drop_prefix(_drop_prefix(found["s"], "_:"), ENTITY)
    o = found["o"]
    author = _drop_prefix(pc.if_else(pc.equal(found["o_kind"], "bnode"), _drop_prefix(o, "_:"), o), ENTITY)
    label = found["label"]
    if ours is not None and crowd is not None and len(found):
        labels = pc.dictionary_encode(label.combine_chunks())
        authors = pc.dictionary_encode(author.combine_chunks() if isinstance(author, pa.ChunkedArray) else author)
        label_id = labels.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        author_id = authors.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        named = pc.not_equal(authors.dictionary, "").to_numpy(zero_copy_only=False)  # an empty QID is no author
        mine = pc.is_in(authors.dictionary, value_set=pa.array(sorted(set(ours)), pa.string()))
        mine = mine.to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(named[author_id])
        # each (label, author) pair's first row, then each label's pairs in the order of those rows
        pairs, first = np.unique(label_id[rows] * len(authors.dictionary) + author_id[rows], return_index=True)
        first = rows[first]
        pair_label = pairs // len(authors.dictionary)
        by_label = np.lexsort((first, pair_label))
        pair_label, first = pair_label[by_label], first[by_label]
        starts = np.flatnonzero(np.r_[True, pair_label[1:] != pair_label[:-1]])
        rank = np.arange(len(first)) - np.repeat(starts, np.diff(np.r_[starts, len(first)]))
        crowded = np.bincount(pair_label, minlength=len(labels.dictionary)) >= crowd
        keep = ~crowded[label_id] | mine[author_id]
        keep[first[rank < crowd]] = True
        mask = pa.array(keep)
        work, author, label = (pc.filter(c, mask) for c in (work, author, label))
    columns = (c.to_pylist() for c in (work, label, author))
    return [{"work_qid": w, "title": t, "author_qid": a} for w, t, a in zip(*columns, strict=True)]


class DumpWikidata:
    """The SPARQL queries of ``sql/sparql/`` answered by SQL over the scanned triples."""

    source = "dump"
    authors_per_query = None  # a lookup costs its titles' rows, not the table: one per batch
    works_per_query = None  # work_records: a lookup by key too

    def __init__(self, snapshot_dir: Path, settings: Settings):
        self.store = open_store(snapshot_dir, settings)
        self.counter = RequestCounter()
        self.fetched_at = self.store.fetched_at
        self.occupations = occupations((SQL_DIR / "sparql" / "candidate_authors.rq").read_text())
        self._prefetched_records: dict[str, list[tuple[int, tuple]]] = {}  # work IRI -> (position, row)

    def _fetched(self, query: str, data: dict) -> Fetched:
        self.counter.record(from_cache=True)  # no request leaves the process
        return Fetched(data, fingerprint("POST", "/sparql", body=query), self.fetched_at, True)

    def select(self, query: str) -> Fetched:
        raise NotImplementedError(
            "the DuckDB dump source answers candidate_authors(), works_by_titles() and work_records(), "
            "not arbitrary SPARQL"
        )

    def candidate_authors(self, *, from_year: int, to_year: int, min_works: int, max_works: int) -> Fetched:
        """``sql/sparql/candidate_authors.rq`` as SQL; each CTE is one clause of the query."""
        from_year, to_year, min_works, max_works = map(int, (from_year, to_year, min_works, max_works))
        query = sparql(
            "candidate_authors", from_year=from_year, to_year=to_year, min_works=min_works, max_works=max_works
        )
        rows = self.store.query(f"""
            WITH
            -- ?author wdt:P106 ?occupation (VALUES) ; wdt:P31 wd:Q5
            author AS (
                SELECT s FROM wd_triples WHERE p = 'P106' AND o_kind = 'uri' AND o IN {sql_list(self.occupations)}
                INTERSECT
                SELECT s FROM wd_triples WHERE p = 'P31' AND o_kind = 'uri' AND o = {sql_string(Q5)}),
            -- wdt:P569 ?any_birth with FILTER(window) ; wdt:P569 ?birth, HAVING on MIN(YEAR(?birth)):
            -- one YEAR() error (unparseable date) makes the MIN an error, which HAVING rejects
            birth AS (
                SELECT s, min(year) AS birth_year FROM wd_births WHERE s IN (SELECT s FROM author) GROUP BY s
                HAVING bool_or(cmp_lo >= {from_year} AND cmp_hi < {to_year}) AND count(year) = count(*)
                   AND min(year) >= {from_year} AND min(year) < {to_year}),
            -- wikibase:sitelinks ?links, MAX(?links)
            links AS (
                SELECT s, arg_max(struct_pack(o, o_kind, o_lang, o_dt),
                                  struct_pack(n := coalesce(TRY_CAST(o AS DOUBLE), '-inf'::DOUBLE), o)) AS links
                FROM wd_triples WHERE p = 'sitelinks' AND s IN (SELECT s FROM birth) GROUP BY s),
            -- ?work wdt:P50 ?author, COUNT(DISTINCT ?work) in HAVING
            works AS (
                SELECT o AS s, count(DISTINCT s) AS works FROM wd_triples
                WHERE p = 'P50' AND o_kind <> 'literal' AND o IN (SELECT s FROM links) GROUP BY o
                HAVING count(DISTINCT s) >= {min_works} AND count(DISTINCT s) <= {max_works}),
            -- OPTIONAL rdfs:label (LANG = "en", else "mul": wd_labels holds only those), SAMPLE: the least
            label AS (SELECT s, min(label) AS name, min(lang) AS name_lang FROM wd_labels
                      WHERE s IN (SELECT s FROM works) GROUP BY s),
            -- OPTIONAL wdt:P648, GROUP_CONCAT(DISTINCT; " ")
            ol AS (
                SELECT s, string_agg(DISTINCT o, ' ' ORDER BY o) AS ol_ids,
                       CASE WHEN count(o_lang) = count(*) AND count(DISTINCT o_lang) = 1 THEN min(o_lang) END AS lang
                FROM wd_triples WHERE p = 'P648' AND o_kind = 'literal' AND s IN (SELECT s FROM works) GROUP BY s)
            SELECT s, label.name, label.name_lang, birth.birth_year, links.links, ol.ol_ids, ol.lang, works.works
            FROM works JOIN birth USING (s) JOIN links USING (s) LEFT JOIN label USING (s) LEFT JOIN ol USING (s)
            ORDER BY {_term_order("s")}
        """)
        bindings = []
        for author, name, name_lang, birth_year, links, ol_ids, ol_lang, works in rows:
            row = {"author": _binding("bnode" if author.startswith("_:") else "uri", author)}
            if name is not None:
                row["name"] = _binding("literal", name, lang=name_lang)
            row["birth_year"] = _integer(birth_year)
            row["sitelinks"] = _binding(links["o_kind"], links["o"], links["o_lang"], links["o_dt"])
            if ol_ids is not None:
                row["ol_ids"] = _binding("literal", ol_ids, lang=ol_lang)
            row["works"] = _integer(works)
            bindings.append(row)
        data = {
            "head": {"vars": ["author", "name", "birth_year", "sitelinks", "ol_ids", "works"]},
            "results": {"bindings": bindings},
        }
        return self._fetched(query, data)

    def works_by_titles(self, titles: list[str]) -> Fetched:
        """``sql/sparql/works_by_titles.rq``: works whose @en label is one of ``titles``, with their P50."""
        wanted = sorted(set(titles))
        query = sparql("works_by_titles", titles=sparql_titles(wanted))
        rows = []
        if wanted:
            rows = self.store.query(
                f"""
                SELECT l.s, l.label, l.o, l.o_kind, l.lang FROM wd_work_labels_rows l
                ORDER BY l.label, {_term_order("l.s")}, l.o_kind = 'literal', {_term_order("l.o")}
            """,
                rows_of={"wd_work_labels": wanted},
            )
        bindings = [
            {
                "work": _binding("bnode" if work.startswith("_:") else "uri", work),
                "title": _binding("literal", title, lang=lang),
                "author": _binding(kind, author),
            }
            for work, title, author, kind, lang in rows
        ]
        return self._fetched(query, {"head": {"vars": ["work", "title", "author"]}, "results": {"bindings": bindings}})

    def works_with_labels(
        self, titles: list[str], ours: Collection[str] | None = None, crowd: int | None = None
    ) -> list[dict]:
        """:func:`kitab.sources.wikidata.works_with_labels`' rows, in :meth:`works_by_titles`' order,
        straight from the lookup: a batch's titles have every author's works of that title (~90,000
        rows at 100,000 authors), and a DuckDB sort, SPARQL JSON, then rows read back out of it
        cost ~15x the lookup. Arrow's sort is stable; rows tied on the query's order differ only
        in ``lang``, which the rows leave out. With ``ours`` and ``crowd``, narrowed as
        :func:`~kitab.sources.wikidata.narrow_crowded` says before any row becomes Python."""
        import pyarrow.compute as pc

        self.counter.record(from_cache=True)  # what works_by_titles counts
        found = self.store.keyed["wd_work_labels"].rows(set(titles))
        found = found.append_column("s_blank", pc.starts_with(found["s"], "_:"))
        found = found.append_column("o_literal", pc.equal(found["o_kind"], "literal"))
        found = found.append_column("o_blank", pc.starts_with(found["o"], "_:"))
        keys = [("label", "ascending"), ("s_blank", "descending"), ("s", "ascending")]
        keys += [("o_literal", "ascending"), ("o_blank", "descending"), ("o", "ascending")]
        return label_table_rows(found.sort_by(keys), ours, crowd)

    def _work_record_rows(self, works: list[str]) -> list[tuple]:
        # The order is total on the columns returned, so any set of works' rows, taken from a larger
        # result in its order, is in the order this query gives for that set alone.
        return self.store.query(
            f"""
            SELECT s, p, o, o_kind, coalesce(label_en, label_mul) AS label,
                   CASE WHEN label_en IS NOT NULL THEN 'en' WHEN label_mul IS NOT NULL THEN 'mul' END AS lang
            FROM wd_work_records_rows
            ORDER BY s, p, o_kind = 'literal', {_term_order("o")}, label IS NOT NULL, lang, label
        """,
            rows_of={"wd_work_records": works},
        )

    def prefetch_work_records(self, work_qids: list[str]) -> None:
        """One lookup for a batch's works; :meth:`work_records` then answers any of them from it
        (the same rows, in the same order, as its own lookup), until the next prefetch."""
        works = sorted({WD + q for q in work_qids})
        self._prefetched_records = {w: [] for w in works}
        for n, row in enumerate(self._work_record_rows(works) if works else []):
            self._prefetched_records[row[0]].append((n, row))

    def work_records(self, work_qids: list[str]) -> Fetched:
        """``sql/sparql/work_records.rq``: the works' P674 / P840 targets, each with its label (en,
        else mul; unbound without either), in the query's order (work, property, target, label)."""
        query = sparql("work_records", works=work_values(work_qids))
        works = [WD + q for q in sorted(set(work_qids))]
        if all(w in self._prefetched_records for w in works):
            rows = [row for _, row in sorted(r for w in works for r in self._prefetched_records[w])]
        else:
            rows = self._work_record_rows(works) if works else []
        bindings = []
        for work, prop, target, kind, label, lang in rows:
            row = {
                "work": _binding("uri", work),
                "property": _binding("uri", WDT + prop),
                "target": _binding(kind, target),
            }
            if label is not None:
                row["label"] = _binding("literal", label, lang=lang)
            bindings.append(row)
        data = {"head": {"vars": ["work", "property", "target", "label"]}, "results": {"bindings": bindings}}
        return self._fetched(query, data)

    def close(self) -> None:
        self.store.close()
