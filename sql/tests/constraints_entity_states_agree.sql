-- Every entity constraint, of every kind (constraints.entity_kind: no kind is named here),
-- maps exactly the author's books whose state for that kind is yes ("contains") or no
-- ("doesn't contain"), and lists as unsure exactly those whose state is unsure; and every book
-- of an author with entity constraints has a state for each kind. Rows returned disagree: one
-- per (constraint, book) read wrongly.
--
-- Read in two passes, for memory: each constraint's lists are compared, as sets, with its
-- author's books by state (one row per author and kind); only a constraint whose sets differ
-- (or whose author has a book without a state, or with two) is then read book by book. Copying
-- every constraint's lists onto each of its author's books held ~1 GB at 10,000 writers.
with c as (
    select release, author_qid, constraint_id, entity_kind, mapped_book_ids, unsure_book_ids,
           json_extract(spec, '$.present')::boolean as present
    from constraints
    where entity_kind is not null
),
by_state as (
    select k.release, k.author_qid, k.kind,
           count(*) - count(distinct b.book_id) + count(*) filter (where e.state is null) as odd_books,
           list_sort(coalesce(list(b.book_id) filter (where e.state = 'yes'), [])) as yes,
           list_sort(coalesce(list(b.book_id) filter (where e.state = 'no'), [])) as no,
           list_sort(coalesce(list(b.book_id) filter (where e.state = 'unsure'), [])) as unsure
    from (select distinct release, author_qid, entity_kind as kind from c) k
    join books b on b.release = k.release and b.author_qid = k.author_qid
    left join book_entities e on e.release = k.release and e.book_id = b.book_id and e.kind = k.kind
    group by all
),
suspect as (
    select c.*
    from c
    join by_state s on s.release = c.release and s.author_qid = c.author_qid and s.kind = c.entity_kind
    where s.odd_books > 0
       or list_sort(list_distinct(c.mapped_book_ids)) <> case when c.present then s.yes else s.no end
       or list_sort(list_distinct(c.unsure_book_ids)) <> s.unsure
),
pairs as (
    select s.*, b.book_id, e.state
    from suspect s
    join books b on b.release = s.release and b.author_qid = s.author_qid
    left join book_entities e on e.release = s.release and e.book_id = b.book_id and e.kind = s.entity_kind
)
select release, constraint_id, book_id, coalesce(state, 'missing') as problem
from pairs
where state is null
   or list_contains(mapped_book_ids, book_id) <> (state = case when present then 'yes' else 'no' end)
   or list_contains(unsure_book_ids, book_id) <> (state = 'unsure')
