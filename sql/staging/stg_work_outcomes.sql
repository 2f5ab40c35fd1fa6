-- What became of each fetched work: kept as a title variant, or rejected (and by whom).
create or replace view stg_work_outcomes as
select w.release, w.author_qid, w.work_key, w.title,
       count(distinct v.variant_id) as n_kept,
       count(distinct r.stage || ':' || r.reason) as n_rejected,
       list(distinct r.stage || ':' || r.reason) filter (where r.stage is not null) as rejected_by
from works_raw w
left join title_variants v
       on v.release = w.release and v.author_qid = w.author_qid and v.work_key = w.work_key
left join rejects r
       on r.release = w.release and r.author_qid = w.author_qid and r.record_kind = 'work'
      and r.record_id = w.work_key
group by all;
