-- One row per released author: books, variants, years and entity counts.
create or replace view books_per_author as
select a.release, a.qid, a.name, a.birth_year, a.sitelinks, a.match_method,
       count(*)                                   as books,
       sum(b.n_variants)                          as title_variants,
       min(b.first_year)                          as first_year,
       max(b.first_year)                          as last_year,
       count(*) filter (where f.has_human_name)   as books_with_human_name,
       count(*) filter (where f.has_city_name)    as books_with_city_name
from authors a
join books b on b.release = a.release and b.author_qid = a.qid
left join book_entity_flags f on f.release = b.release and f.book_id = b.book_id
group by all;
