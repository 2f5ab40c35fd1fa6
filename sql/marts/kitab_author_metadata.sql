-- KITAB's data/KITAB-author-metadata.json: one row per author with at least one query,
-- KITAB's keys and types (int64 numbers), sorted by sitelinks descending as KITAB's file is.
-- synthetic (ours, after KITAB's columns): the row's WikiData or Open Library id was made up
-- by kitab's snapshot generator, so the author is not a real one (sql/staging/synthetic_ids.sql).
-- release (ours, last): authors rows exist per release, so the match is per release.
create or replace view kitab_author_metadata as
select
    a.name                       as "Author",
    cast(a.birth_year as bigint) as "Birth Year",
    cast(a.sitelinks as bigint)  as "# of sitelinks",
    a.qid                        as "WikiData ID",
    a.ol_author_key              as "OpenLibrary ID",
    kitab_synthetic_id(a.qid, a.source) or kitab_synthetic_id(a.ol_author_key, a.source) as synthetic,
    a.release                    as release
from authors a
where (a.release, a.qid) in (select release, author_qid from queries)
order by release, "# of sitelinks" desc, "Author", "WikiData ID";
