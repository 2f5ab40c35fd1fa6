"""Snapshots: WikiData and Open Library in their own public formats, for offline runs.

``format`` reads and writes the files, ``rdfstore`` answers SPARQL over the triples,
``olindex`` answers the Open Library API from the dumps, ``generate`` makes snapshots
(with ``seed``, ``curated``, ``words``, ``spec``, ``cases`` and ``emit`` behind it).
See docs/snapshot.md.
"""
