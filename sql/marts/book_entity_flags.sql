-- Each book's entity flags over all its titles (canonical and variants): a book "has a human
-- name" if any tagger version found one in any of its titles. Tags never rewrite titles.
create or replace view book_entity_flags as
select b.release, b.book_id, b.author_qid, b.canonical_title,
       coalesce(bool_or(e.kind = 'human'), false) as has_human_name,
       coalesce(bool_or(e.kind = 'city'), false)  as has_city_name,
       list(distinct e.text order by e.text) filter (where e.kind = 'human') as human_names,
       list(distinct e.text order by e.text) filter (where e.kind = 'city')  as city_names
from books b
left join title_entities e on e.release = b.release and e.book_id = b.book_id
group by all;
