-- What became of each fetched work: kept as a title variant, or rejected (and by whom).
-- Each side counted per work before the join (distinct counts over the joined rows took
-- ~18 CPU-s at 100,000 authors).
create or replace view stg_work_outcomes as
with works as (
    select distinct release, author_qid, work_key, title from works_raw
),
kept as (
    select release, author_qid, work_key, count(distinct variant_id) as n_kept
    from title_variants group by all
),
rejected as (
    select release, author_qid, record_id as work_key,
           count(distinct stage || ':' || reason) as n_rejected,
           list(distinct stage || ':' || reason) filter (where stage is not null) as rejected_by
    from rejects where record_kind = 'work'
    group by all
)
select w.release, w.author_qid, w.work_key, w.title,
       coalesce(k.n_kept, 0) as n_kept, coalesce(r.n_rejected, 0) as n_rejected, r.rejected_by
from works w
left join kept k on k.release = w.release and k.author_qid = w.author_qid and k.work_key = w.work_key
left join rejected r on r.release = w.release and r.author_qid = w.author_qid and r.work_key = w.work_key;
