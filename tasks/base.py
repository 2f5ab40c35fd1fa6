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
    """One row of the ``rejects`` table (schema: schemas/rejects.json)."""
    return {
        "stage": stage,
        "reason": reason,
        "record_kind": record_kind,
        "record_id": record_id,
        "author_qid": author_qid,
        "title": title,
        "evidence": json.dumps(evidence, sort_keys=True, ensure_ascii=False) if evidence else None,
    }
