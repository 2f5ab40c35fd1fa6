"""What every stage returns: its tables, its rejects (each with a reason) and its stats."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StageResult:
    """Rows per output table, rejected records (never silently dropped) and run-report stats."""

    tables: dict[str, list[dict]] = field(default_factory=dict)
    rejects: list[dict] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def merge(cls, results: list[StageResult]) -> StageResult:
        """Results of one stage run per item (e.g. per author), as one: tables and rejects
        concatenated in the given order; per-item stats are not summed."""
        merged = cls()
        for r in results:
            for name, rows in r.tables.items():
                merged.tables.setdefault(name, []).extend(rows)
            merged.rejects += r.rejects
        return merged


# Every reason a stage can give a rejects row, with its stage: the one list (tests/test_reject_reasons.py
# checks that the code passes no other, and that a test produces each, through the pipeline where it can).
REASONS: dict[str, str] = {
    "no_english_label": "sample_authors",  # a WikiData author without an English label
    "no_openlibrary_match": "match_openlibrary",  # no Open Library author by P648 or by name
    "birth_year_mismatch": "match_openlibrary",  # name found, birth year differs
    "openlibrary_author_released_before": "match_openlibrary",  # its Open Library author is in a release
    "source_unavailable": "match_openlibrary | fetch_works",  # Open Library did not answer (retries spent)
    "work_without_key": "fetch_works",  # a search result without a work key
    "no_works_on_openlibrary": "fetch_works",  # an author without any work
    "duplicate_row": "clean_books",
    "unknown_author": "clean_books",  # a work of an author not in authors
    "title_too_long": "clean_books",
    "empty_title": "clean_books",
    "title_is_author_name": "clean_books",
    "more_than_two_authors": "clean_books",
    "not_english_tagged": "clean_books",  # edition languages without English
    "not_english_detected": "clean_books",  # untagged, and the language rule says not English
    "language_unknown": "clean_books",  # untagged name-only title of an author without enough English evidence
    "wikidata_other_author": "clean_books",  # WikiData says another author wrote it
    "author_below_min_books": "dedup_titles",
    "author_not_in_authors": "generate_constraints",
    "entity_books_mostly_unsure": "generate_constraints",  # an entity key resting on too few decided books
    "key_error_over_bound": "sample_queries",  # --max-key-error
}


def reject(
    stage: str,
    reason: str,
    record_kind: str,
    record_id: str,
    *,
    author_qid: str | None = None,
    title: str | None = None,
    evidence: dict | None = None,
) -> dict:
    """One row of the ``rejects`` table (schema: schemas/rejects.json); ``reason``: one of REASONS."""
    return {
        "stage": stage,
        "reason": reason,
        "record_kind": record_kind,
        "record_id": record_id,
        "author_qid": author_qid,
        "title": title,
        "evidence": json.dumps(evidence, sort_keys=True, ensure_ascii=False) if evidence else None,
    }
