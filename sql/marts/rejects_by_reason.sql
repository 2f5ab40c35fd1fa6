-- Rejects per release, stage and reason (what the pipeline dropped, and why).
create or replace view rejects_by_reason as
select release, stage, reason, record_kind, count(*) as n
from rejects
group by all;
