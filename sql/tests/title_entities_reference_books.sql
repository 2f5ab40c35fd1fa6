-- Every tag points at a book of this release, and its span is exactly its text inside the
-- tagged title (the book's canonical title or the variant's title).
with titles as (
    select release, 'book' as target_kind, book_id as target_id, canonical_title as title from books
    union all
    select release, 'variant', variant_id, title from title_variants
)
select e.release, e.entity_id, e.text, t.title
from title_entities e
left join books b on b.release = e.release and b.book_id = e.book_id
left join titles t on t.release = e.release and t.target_kind = e.target_kind and t.target_id = e.target_id
where b.book_id is null or t.title is null
   or e.start < 0 or e."end" <= e.start or e."end" > length(t.title)
   or substr(t.title, e.start + 1, e."end" - e.start) <> e.text
