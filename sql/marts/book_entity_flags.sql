-- Each book's entity flags, wide, for readers that want one row per book (the export): from
-- the long view book_entities (one row per book and kind, any kind). has_* is true only for a
-- decided "yes"; *_state says yes / no / unsure; the names are the spans over all its titles.
create or replace view book_entity_flags as
select b.release, b.book_id, b.author_qid, b.canonical_title,
       coalesce(any_value(s.state) filter (where s.kind = 'human') = 'yes', false) as has_human_name,
       coalesce(any_value(s.state) filter (where s.kind = 'city') = 'yes', false)  as has_city_name,
       any_value(s.state) filter (where s.kind = 'human') as human_state,
       any_value(s.state) filter (where s.kind = 'city')  as city_state,
       (select list(distinct e.text order by e.text) from title_entities e
         where e.release = b.release and e.book_id = b.book_id and e.kind = 'human') as human_names,
       (select list(distinct e.text order by e.text) from title_entities e
         where e.release = b.release and e.book_id = b.book_id and e.kind = 'city') as city_names
from books b
left join book_entities s on s.release = b.release and s.book_id = b.book_id
group by all;
