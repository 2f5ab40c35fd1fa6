-- Every book has a state (yes / no / unsure) for every entity kind its release tagged, and
-- only those states: no kind is named here, so a new kind is covered without an SQL edit.
with kinds as (select distinct release, kind from book_entities)
select b.release, b.book_id, k.kind, coalesce(e.state, 'missing') as problem
from books b
join kinds k on k.release = b.release
left join book_entities e on e.release = b.release and e.book_id = b.book_id and e.kind = k.kind
where e.state is null or e.state not in ('yes', 'no', 'unsure')
