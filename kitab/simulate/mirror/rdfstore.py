"""The snapshot's WikiData triples behind a real SPARQL 1.1 engine (pyoxigraph).

The mirror's ``/sparql`` endpoint and the in-process "dump" source both answer through
:func:`query_json`, so they return the very same bytes for the same query.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pyoxigraph

from kitab.sources.snapshot.format import WDQS_PREFIXES, WIKIDATA_FILE, SnapshotFormatError


def load_store(snapshot_dir: str | os.PathLike) -> pyoxigraph.Store:
    """An in-memory store holding ``wikidata.nt.gz`` (bulk-loaded, streamed from the gzip)."""
    path = Path(snapshot_dir) / WIKIDATA_FILE
    if not path.exists():
        raise SnapshotFormatError(f"{path}: missing; is {snapshot_dir} a snapshot folder?")
    store = pyoxigraph.Store()
    try:
        with gzip.open(path, "rb") as triples:
            store.bulk_load(input=triples, format=pyoxigraph.RdfFormat.N_TRIPLES)
    except SyntaxError as exc:  # pyoxigraph reports the line and column
        raise SnapshotFormatError(f"{path}: {exc}") from None
    except (OSError, EOFError) as exc:  # not gzip, or cut short
        raise SnapshotFormatError(f"{path}: unreadable gzip: {exc}") from None
    return store


def query_json(store: pyoxigraph.Store, sparql: str) -> bytes:
    """Run a SELECT or ASK query; return SPARQL 1.1 Query Results JSON (pyoxigraph's serializer).

    WDQS's usual prefixes (``wd:``, ``wdt:``, ``wikibase:``, ``rdfs:``, ``xsd:``, ``schema:``)
    are predeclared as on WDQS, so a query need not repeat them. Raises ``ValueError`` for a
    query that does not parse (with the parser's position) and for CONSTRUCT/DESCRIBE, which
    have no JSON results form.
    """
    try:
        results = store.query(sparql, prefixes=WDQS_PREFIXES)
    except SyntaxError as exc:
        raise ValueError(f"malformed SPARQL query: {exc}") from None
    if isinstance(results, pyoxigraph.QueryTriples):
        raise ValueError("CONSTRUCT and DESCRIBE are not supported: SPARQL JSON results need SELECT or ASK")
    return results.serialize(format=pyoxigraph.QueryResultsFormat.JSON)
