-- One row per released author: books, variants, years and, per entity kind, the books whose
-- titles name one (a map: kind -> books; any kind the release tagged).
create or replace view books_per_author as
with named as (
    select release, author_qid, map_from_entries(list({'k': kind, 'v': n} order by kind)) as books_with_name
    from (select release, author_qid, kind, count(*) filter (where has_name) as n
          from book_entity_flags group by all)
    group by all
)
select a.release, a.qid, a.name, a.birth_year, a.sitelinks, a.match_method,
       count(*)                                   as books,
       sum(b.n_variants)                          as title_variants,
       min(b.first_year)                          as first_year,
       max(b.first_year)                          as last_year,
       any_value(n.books_with_name)               as books_with_name
from authors a
join books b on b.release = a.release and b.author_qid = a.qid
left join named n on n.release = a.release and n.author_qid = a.qid
group by a.release, a.qid, a.name, a.birth_year, a.sitelinks, a.match_method;
