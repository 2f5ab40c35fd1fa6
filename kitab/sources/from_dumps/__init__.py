"""The public WikiData and Open Library dumps, as published, -> a snapshot folder (``kitab snapshot from-dumps``).

``inputs`` finds and recognises the files, ``scan`` makes one parallel, resumable pass over
each, ``wikidata`` and ``openlibrary`` are the per-chunk readers, ``build`` joins and writes
the snapshot with its manifest. See ``docs/dumps.md``.
"""
