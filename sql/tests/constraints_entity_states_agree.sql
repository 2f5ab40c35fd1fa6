-- Every entity constraint, of every kind (constraints.entity_kind: no kind is named here),
-- maps exactly the author's books whose state for that kind is yes ("contains") or no
-- ("doesn't contain"), and lists as unsure exactly those whose state is unsure; and every book
-- of an author with entity constraints has a state for each kind. Rows returned disagree.
with c as (
    select release, author_qid, constraint_id, entity_kind, mapped_book_ids, unsure_book_ids,
           json_extract(spec, '$.present')::boolean as present
    from constraints
    where entity_kind is not null
),
pairs as (
    select c.*, b.book_id, e.state
    from c
    join books b on b.release = c.release and b.author_qid = c.author_qid
    left join book_entities e on e.release = c.release and e.book_id = b.book_id and e.kind = c.entity_kind
)
select release, constraint_id, book_id, coalesce(state, 'missing') as problem
from pairs
where state is null
   or list_contains(mapped_book_ids, book_id) <> (state = case when present then 'yes' else 'no' end)
   or list_contains(unsure_book_ids, book_id) <> (state = 'unsure')
