-- Every query's constraint ids exist for the same author and release.
select q.release, q.query_id, c_id
from (select release, query_id, author_qid, unnest(constraint_ids) as c_id from queries) q
left join constraints c on c.release = q.release and c.constraint_id = q.c_id and c.author_qid = q.author_qid
where c.constraint_id is null
