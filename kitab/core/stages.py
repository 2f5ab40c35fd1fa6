"""The one vocabulary of a refresh's stages.

A *stage* is one step of KITAB's data collection: a module of ``tasks/`` of the same name,
and the value of ``rejects.stage`` for what it drops. A *step* is what the pipeline runs,
times, shows in its progress, records in the ledger (``releases.stages``) and caches in the
work folder: one stage each, except ``collect``, which runs four stages per batch of authors,
and ``start``, which opens the sources.

So a stage function returns a ``StageResult`` (tasks/base.py: rows, rejects, stats, in
memory) and a step returns a ``StepResult`` (kitab/core/workdir.py: Parquet refs and stats,
what travels between processes): two ideas, two names.
"""

from __future__ import annotations

SAMPLE_AUTHORS = "sample_authors"
MATCH_OPENLIBRARY = "match_openlibrary"
FETCH_WORKS = "fetch_works"
CLEAN_BOOKS = "clean_books"
DEDUP_TITLES = "dedup_titles"
TAG_ENTITIES = "tag_entities"
GENERATE_CONSTRAINTS = "generate_constraints"
SAMPLE_QUERIES = "sample_queries"
PUBLISH = "publish"

STAGES = (
    SAMPLE_AUTHORS,
    MATCH_OPENLIBRARY,
    FETCH_WORKS,
    CLEAN_BOOKS,
    DEDUP_TITLES,
    TAG_ENTITIES,
    GENERATE_CONSTRAINTS,
    SAMPLE_QUERIES,
    PUBLISH,
)

START = "start"
COLLECT = "collect"
# step -> the stages it runs, in run order
STEPS = {
    START: (),
    SAMPLE_AUTHORS: (SAMPLE_AUTHORS,),
    COLLECT: (MATCH_OPENLIBRARY, FETCH_WORKS, CLEAN_BOOKS, DEDUP_TITLES),
    TAG_ENTITIES: (TAG_ENTITIES,),
    GENERATE_CONSTRAINTS: (GENERATE_CONSTRAINTS,),
    SAMPLE_QUERIES: (SAMPLE_QUERIES,),
    PUBLISH: (PUBLISH,),
}
