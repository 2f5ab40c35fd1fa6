-- Every tag points at a book of this release, and its span lies inside the tagged title.
select e.release, e.entity_id
from title_entities e
left join books b on b.release = e.release and b.book_id = e.book_id
where b.book_id is null or e.start < 0 or e."end" <= e.start
