"""A ledger row's digests: one sha256 per field, written with the row at its commit (column
``digests``), so that a row edited afterwards (its Parquet rewritten with DuckDB or pyarrow) is
told from the row kitab wrote, and the field that changed is named.

Every stored field is covered but ``digests`` itself (which holds the field digests and one
digest of them all, so an edit of the digests themselves is named as such): what a reader trusts is the whole row
(config, counts, checksums, inputs, seed, source, snapshot, code version, created_at, stages,
history, changes, review_labels, excluded_releases, release_id, requests_made). A field's digest
is the sha256 of canonical JSON (sorted keys, no spaces, UTF-8) of ``{"field": name, "value":
value}``: the name is in it, so two fields' values swapped are two edits; a timestamp is its
UTC ISO text, so the Parquet type DuckDB or pyarrow writes it back with (seconds or
microseconds, with or without a time zone) is no edit; a string (the JSON columns) is digested
as stored, byte for byte.

A digest is not a signature: whoever rewrites a field and its digest with this module's code
makes a row kitab accepts. It catches a row changed by hand or by a tool, not a forger.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime

DIGESTS = "digests"


def canonical(value):
    """``value`` as its digest reads it: a timestamp as UTC ISO text (naive ones are UTC, as
    kitab writes them), a date as ISO text, anything else as it is."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def field_digest(name: str, value) -> str:
    return _sha({"field": name, "value": canonical(value)})


def _sha(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digests_of(row: Mapping, fields: Iterable[str]) -> str:
    """The ``digests`` column of ``row`` over ``fields`` (the ledger schema's columns): JSON,
    ``{"fields": {field: sha256}, "row": sha256 of that map}`` (the row digest tells an edit of
    the map itself from an edit of a field)."""
    digests = {f: field_digest(f, row.get(f)) for f in sorted(set(fields) - {DIGESTS})}
    return json.dumps({"fields": digests, "row": _sha(digests)}, sort_keys=True)


def edited_fields(row: Mapping) -> list[str] | None:
    """The fields of ``row`` whose value is not the one its digests were written for, sorted
    ([]: none; ``["digests"]``: the digests column itself is not what kitab wrote). None: the
    row has no digests (written before they existed: unsealed). A field the digests do not
    name must be null (a column added to the schema after the row was written); a field they
    name must be there (a dropped column is an edit)."""
    raw = row.get(DIGESTS)
    if raw is None:
        return None
    try:
        written = json.loads(raw)
        sealed = written["fields"]
        intact = isinstance(sealed, dict) and all(isinstance(v, str) for v in sealed.values())
    except (TypeError, ValueError, KeyError):
        return [DIGESTS]
    if not intact or written.get("row") != _sha(sealed):
        return [DIGESTS]
    fields = (set(row) | set(sealed)) - {DIGESTS}
    return [
        f
        for f in sorted(fields)
        if (row.get(f) is not None if f not in sealed else f not in row or sealed[f] != field_digest(f, row[f]))
    ]
