-- Per author with queries (and release): KITAB's all_books and raw_books as lists, which
-- kitab_book_constraints.sql stringifies onto each of the author's queries. all_books entries
-- are "Title (YYYY)" (just "Title" without a year) sorted by title; raw_books are the distinct
-- titles fetched before cleaning that are the author's own books (see raw_books below). Read
-- per author where they are needed once per author (the evaluator's truths,
-- kitab/release/evaluation/run.py): stringified per query, 20,000 queries' copies held ~0.3 GB
-- of DuckDB's memory at 10,000 authors. (This file sorts before kitab_book_constraints.sql,
-- so running sql/marts/ in name order creates it first.)
create or replace view kitab_author_books as
with all_books as (
    select release, author_qid,
           list(case when first_year is null then canonical_title
                     else canonical_title || ' (' || cast(first_year as varchar) || ')' end
                order by canonical_title, book_id) as titles
    from books
    group by release, author_qid
), raw_books as (
    -- KITAB's evaluator forgives an answer found here (neither scored nor "not from the
    -- author"), so only titles that are the author's own books belong here: kept works, and
    -- works dropped only for their language or as a duplicate row. A title cleaning rejected
    -- as junk or as someone else's (empty_title, title_is_author_name, more_than_two_authors,
    -- wikidata_other_author, any new reason) stays out: an empty raw title is a substring of
    -- every answer and would forgive any invented title.
    select w.release, w.author_qid, list_sort(list_distinct(list(w.title))) as titles
    from works_raw w
    where nullif(trim(w.title), '') is not null
      and not exists (
        select 1 from rejects r
        where r.release = w.release and r.author_qid = w.author_qid and r.record_kind = 'work'
          and r.record_id = w.work_key and r.stage = 'clean_books'
          and r.reason not in ('not_english_tagged', 'not_english_detected', 'language_unknown', 'duplicate_row'))
    group by w.release, w.author_qid
)
select q.release, q.author_qid, ab.titles as all_books, rb.titles as raw_books
from (select distinct release, author_qid from queries) q
left join all_books ab on ab.release = q.release and ab.author_qid = q.author_qid
left join raw_books rb on rb.release = q.release and rb.author_qid = q.author_qid;
