-- An independent check of every query's ground truth, in SQL only (no kitab Python: not
-- tasks/constraints, not the taggers' code), over a release-scoped connection's `books`,
-- `title_entities`, `constraints` and `queries`. It restates docs/constraints.md's rules:
--   title processing: lower-case, '&' -> 'and', ASCII punctuation deleted, words split on
--   whitespace, one leading the/a/an dropped unless it is the only word; first / last letter
--   a-z only; word count exact; year range on the book's first_year (none: no range);
--   human / city name (any entity kind): the book's state in book_entities, yes or no; an
--   unsure book satisfies neither the constraint nor its negation (in no key);
--   a book answers a query when ONE of its titles satisfies every criterion.
-- Each row returned is a disagreement with `queries`:
--   'mapped but no title satisfies'            a mapped book fails the rules with every title;
--   'listed title does not satisfy'            the title mapped_titles names for it fails them;
--   'canonical title satisfies, not mapped'    the book's own title answers but it is missing.
-- A book answering only through a variant title that is not mapped is not a disagreement:
-- a variant the evaluator would not credit to the book does not count (docs/constraints.md);
-- the query at the end of this file counts them.
with titles as (
    select b.book_id, b.author_qid, b.first_year, t.title, t.title = b.canonical_title as canonical
    from books b, unnest(list_distinct(list_prepend(b.canonical_title, coalesce(b.variant_titles, [])))) as t(title)
),
split as (
    select *, list_filter(string_split_regex(
                  regexp_replace(replace(lower(title), '&', 'and'), '[!-/:-@\[-`{-~]', '', 'g'), '\s+'),
              lambda w: w <> '') as raw_words
    from titles
),
worded as (
    select *, case when len(raw_words) > 1 and raw_words[1] in ('the', 'a', 'an') then raw_words[2:]
                   else raw_words end as words
    from split
),
title_facts as (
    select book_id, author_qid, first_year, title, canonical, len(words) as n_words,
           case when len(words) > 0 and regexp_matches(left(words[1], 1), '^[a-z]$') then left(words[1], 1) end
               as first_letter,
           case when len(words) > 0 and regexp_matches(right(words[len(words)], 1), '^[a-z]$')
                then right(words[len(words)], 1) end as last_letter
    from worded
),
criteria as (
    select q.query_id, q.author_qid, json_extract_string(c.spec, '$.type') as kind, c.spec, c.entity_kind
    from (select query_id, author_qid, unnest(constraint_ids) as constraint_id from queries) q
    join constraints c on c.constraint_id = q.constraint_id
),
per_title as (
    select c.query_id, t.book_id, t.title, t.canonical,
           bool_and(coalesce(case c.kind
               when 'starts_with' then t.first_letter = json_extract_string(c.spec, '$.letter')
               when 'ends_with' then t.last_letter = json_extract_string(c.spec, '$.letter')
               when 'word_count' then t.n_words = cast(json_extract(c.spec, '$.count') as integer)
               when 'year_range' then t.first_year between cast(json_extract(c.spec, '$.from') as integer)
                                                     and cast(json_extract(c.spec, '$.to') as integer)
               else f.state = case when cast(json_extract(c.spec, '$.present') as boolean) then 'yes' else 'no' end
           end, false)) as ok
    from criteria c
    join title_facts t on t.author_qid = c.author_qid
    left join book_entities f on f.book_id = t.book_id and f.kind = c.entity_kind
    group by all
),
per_book as (
    select query_id, book_id, bool_or(ok) as any_title, bool_or(ok and canonical) as canonical_ok
    from per_title group by all
),
mapped as (
    select query_id, unnest(mapped_book_ids) as book_id, unnest(mapped_titles) as listed from queries
)
select m.query_id, m.book_id, 'mapped but no title satisfies' as problem
from mapped m left join per_book p using (query_id, book_id)
where not coalesce(p.any_title, false)
union all
select m.query_id, m.book_id, 'listed title does not satisfy'
from mapped m
where not exists (select 1 from per_title t where t.query_id = m.query_id and t.book_id = m.book_id
                                             and t.title = m.listed and t.ok)
union all
select p.query_id, p.book_id, 'canonical title satisfies, not mapped'
from per_book p
where p.canonical_ok and not exists (select 1 from mapped m where m.query_id = p.query_id and m.book_id = p.book_id)
order by 1, 2, 3;
