"""``--source dump`` at dump scale: the snapshot scanned once by DuckDB into sorted Parquet, then
answered by SQL. One idea a module:

    sql.py          the SQL templates: literals, the gzip readers, Open Library's key rules
    scan.py         the scan: the four snapshot files -> the tables the lookups read
    keyed.py        the keyed Arrow format: a batch's rows by key, at the cost of its keys
    store.py        the cache (scanned once per snapshot, under the project's lock) and its queries
    wikidata.py     DumpWikidata: the two SPARQL queries as SQL, pyoxigraph's answers
    openlibrary.py  DumpOpenLibrary: the endpoints, OLIndex's answers, batch prefetch

The N-Triples grammar (kitab/sources/ntriples.py) and the date rules (kitab/sources/dates.py)
are shared with the from-dumps builder (kitab/sources/from_dumps/)."""
