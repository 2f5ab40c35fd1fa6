-- Every released author was sampled in its release, with an Open Library match: the view
-- authors (sql/staging/authors.sql) then holds exactly the released authors.
select r.release, r.qid
from released_authors r
left join sampled_authors s on s.release = r.release and s.qid = r.qid
where s.qid is null or s.match_method = 'unmatched'
