-- The pipeline's entity constraints map exactly the books that the SQL view flags:
-- a book is mapped by "contains a human name" iff has_human_name, and so on.
with c as (
    select release, author_qid, constraint_id, constraint_type, mapped_book_ids,
           json_extract(spec, '$.present')::boolean as present
    from constraints
    where constraint_type in ('human_name', 'city_name')
)
select c.release, c.constraint_id, f.book_id
from c
join book_entity_flags f on f.release = c.release and f.author_qid = c.author_qid
where list_contains(c.mapped_book_ids, f.book_id)
      <> ((case when c.constraint_type = 'human_name' then f.has_human_name else f.has_city_name end) = c.present)
