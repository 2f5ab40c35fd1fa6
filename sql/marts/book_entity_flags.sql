-- Each book's entity flags, long: one row per book and entity kind the release tagged (from
-- book_entities, any kind: no kind is named here). has_name is true only for a decided "yes";
-- state says yes / no / unsure; names are the spans found over all the book's titles. The
-- export's wide columns (has_human_name, human_names, ...) are made from this view per kind
-- (kitab/release/export.py, from the entity-kind registry).
create or replace view book_entity_flags as
select s.release, s.book_id, b.author_qid, b.canonical_title, s.kind,
       s.state = 'yes' as has_name,
       s.state,
       (select list(distinct e.text order by e.text) from title_entities e
         where e.release = s.release and e.book_id = s.book_id and e.kind = s.kind) as names
from book_entities s
join books b on b.release = s.release and b.book_id = s.book_id;
