-- An independent check of every claim's label (issue 32), in SQL only (not tasks/claims.py),
-- over a release-scoped connection's `claims`, `books`, `title_variants`, `book_entities` and
-- `constraints`. It restates docs/claims.md's rules:
--   attribute: the claim "<author> wrote a book <constraint>" is true when one title of one
--     book of the author (canonical or any variant) has the value under BOTH readings of
--     docs/constraints.md's title rules (with and without dropping a leading the/a/an), and
--     false when no title has it under EITHER reading; a year range reads first_year (false
--     needs every book to have one); an entity constraint reads book_entities (true: a book
--     in the wanted state; false: none, and no unsure or missing state);
--   authorship: true when the named author has a book with exactly that title; false when no
--     title of the named author has the match key or the lower-cased text of any title of the
--     quoted book;
--   year: true when the year is the book's first_year; false when it is at least 5 years from
--     first_year and from every variant's year and year_raw.
-- Each row returned is a problem: 'label disagrees', 'undetermined' (neither rule holds), or a
-- pair that is not a minimal pair ('pair ...').
with titles as (
    select b.book_id, b.author_qid, b.first_year, t.title
    from books b, unnest(list_distinct(list_prepend(b.canonical_title, coalesce(b.variant_titles, [])))) as t(title)
),
split as (
    select *, list_filter(string_split_regex(
                  regexp_replace(replace(lower(title), '&', 'and'), '[!-/:-@\[-`{-~]', '', 'g'), '\s+'),
              lambda w: w <> '') as raw_words
    from titles
),
readings as (  -- one row per title and reading: article dropped (KITAB's rule) or kept
    select book_id, author_qid, title, dropped,
           case when dropped and len(raw_words) > 1 and raw_words[1] in ('the', 'a', 'an') then raw_words[2:]
                else raw_words end as words
    from split, (values (true), (false)) r(dropped)
),
facts as (
    select book_id, author_qid, title, dropped, len(words) as n_words,
           case when len(words) > 0 and regexp_matches(left(words[1], 1), '^[a-z]$') then left(words[1], 1) end
               as first_letter,
           case when len(words) > 0 and regexp_matches(right(words[len(words)], 1), '^[a-z]$')
                then right(words[len(words)], 1) end as last_letter
    from readings
),
attr as (
    select cl.query_id, c.constraint_id, c.author_qid, json_extract_string(c.spec, '$.type') as kind, c.spec,
           c.entity_kind
    from claims cl join constraints c on c.constraint_id = cl.constraint_id
    where cl.kind = 'attribute'
),
title_hits as (  -- per claim and title: does each reading have the value?
    select a.query_id, f.title,
           bool_and(coalesce(case a.kind
               when 'starts_with' then f.first_letter = json_extract_string(a.spec, '$.letter')
               when 'ends_with' then f.last_letter = json_extract_string(a.spec, '$.letter')
               when 'word_count' then f.n_words = cast(json_extract(a.spec, '$.count') as integer)
           end, false)) as both_readings,
           bool_or(coalesce(case a.kind
               when 'starts_with' then f.first_letter = json_extract_string(a.spec, '$.letter')
               when 'ends_with' then f.last_letter = json_extract_string(a.spec, '$.letter')
               when 'word_count' then f.n_words = cast(json_extract(a.spec, '$.count') as integer)
           end, false)) as either_reading
    from attr a join facts f on f.author_qid = a.author_qid
    where a.kind in ('starts_with', 'ends_with', 'word_count')
    group by all
),
attr_truth as (
    select a.query_id,
        case
            when a.kind in ('starts_with', 'ends_with', 'word_count') then
                case when exists (select 1 from title_hits h where h.query_id = a.query_id and h.both_readings) then true
                     when not exists (select 1 from title_hits h where h.query_id = a.query_id and h.either_reading)
                         then false end
            when a.kind = 'year_range' then
                case when exists (select 1 from books b where b.author_qid = a.author_qid
                                  and b.first_year between cast(json_extract(a.spec, '$.from') as integer)
                                                       and cast(json_extract(a.spec, '$.to') as integer)) then true
                     when not exists (select 1 from books b where b.author_qid = a.author_qid and b.first_year is null)
                         then false end
            else
                case when exists (select 1 from books b join book_entities e on e.book_id = b.book_id
                                  where b.author_qid = a.author_qid and e.kind = a.entity_kind
                                    and e.state = case when cast(json_extract(a.spec, '$.present') as boolean)
                                                       then 'yes' else 'no' end) then true
                     when not exists (select 1 from books b left join book_entities e
                                        on e.book_id = b.book_id and e.kind = a.entity_kind
                                      where b.author_qid = a.author_qid and coalesce(e.state, 'unsure') = 'unsure')
                         then false end
        end as truth
    from attr a
),
quoted_keys as (  -- every key the quoted book's titles have: match keys and lower-cased titles
    select cl.query_id, k.key
    from claims cl join title_variants v on v.book_id = cl.book_id,
         unnest([v.match_key, lower(v.title)]) as k(key)
    where cl.kind = 'authorship'
    union
    select query_id, lower(title) from claims where kind = 'authorship'
),
authorship_truth as (
    select cl.query_id,
        case when exists (select 1 from titles t where t.author_qid = cl.claim_author_qid and t.title = cl.title) then true
             when not exists (select 1 from title_variants v join quoted_keys q on q.query_id = cl.query_id
                              where v.author_qid = cl.claim_author_qid and (v.match_key = q.key or lower(v.title) = q.key))
                 then false end as truth
    from claims cl where cl.kind = 'authorship'
),
year_truth as (
    select cl.query_id,
        case when b.first_year = cl.year and b.author_qid = cl.claim_author_qid then true
             when abs(cl.year - b.first_year) >= 5
                  and not exists (select 1 from title_variants v where v.book_id = cl.book_id
                                  and (abs(cl.year - v.year) < 5 or abs(cl.year - v.year_raw) < 5)) then false
        end as truth
    from claims cl join books b on b.book_id = cl.book_id
    where cl.kind = 'year'
),
truth as (
    select * from attr_truth union all select * from authorship_truth union all select * from year_truth
),
pairs as (
    select pair_id, count(*) as n, count(*) filter (where label) as n_true,
           list_sort(list(position)) as positions,
           (count(distinct claim_author_qid) > 1)::int + (count(distinct coalesce(year, -1)) > 1)::int
           + (count(distinct coalesce(constraint_id, '')) > 1)::int + (count(distinct coalesce(title, '')) > 1)::int
           + (count(distinct coalesce(book_id, '')) > 1)::int + (count(distinct kind) > 1)::int
           + (count(distinct author_qid) > 1)::int as slots_differing
    from claims group by pair_id
)
select cl.query_id, case when t.truth is null then 'undetermined' else 'label disagrees' end as problem
from claims cl left join truth t using (query_id)
where t.truth is distinct from cl.label
union all
select pair_id, 'pair has ' || n || ' claims, ' || n_true || ' true' from pairs where n <> 2 or n_true <> 1
union all
select pair_id, 'pair positions are not 1 and 2' from pairs where positions <> [1, 2]
union all
select pair_id, 'pair differs in ' || slots_differing || ' slots' from pairs where slots_differing <> 1
order by 1, 2;
