-- An independent check of every claim's label (issue 32), in SQL only (not tasks/claims.py),
-- over a release-scoped connection's `claims`, `books`, `title_variants`, `book_entities` and
-- `constraints`. It restates docs/claims.md's rules:
--   attribute: the claim "<author> wrote a book <constraint>" is true when one title of one
--     book of the author (canonical or any variant) has the value under BOTH readings of
--     docs/constraints.md's title rules (with and without dropping a leading the/a/an), and
--     false when no title has it under EITHER reading; a year range reads first_year (false
--     needs every book to have one); an entity constraint (any entity kind) reads book_entities
--     (true: a book in the wanted state; false: none, and no unsure or missing state);
--   authorship: true when the named author has a book with exactly that title; false when no
--     title of the named author has the match key or the lower-cased text of any title of the
--     quoted book;
--   year: true when the year is the book's first_year; false when it is at least 5 years from
--     first_year and from every variant's year and year_raw.
-- Each row returned is a problem: 'label disagrees', 'undetermined' (neither rule holds), or a
-- pair that is not a minimal pair ('pair ...').
with titles as (  -- (unnest in the select list: a lateral join here cost ~14 CPU-s at 100,000 authors)
    select book_id, author_qid, first_year,
           unnest(list_distinct(list_prepend(canonical_title, coalesce(variant_titles, [])))) as title
    from books
),
split as (
    select *, list_filter(string_split_regex(
                  regexp_replace(replace(lower(title), '&', 'and'), '[!-/:-@\[-`{-~]', '', 'g'), '\s+'),
              lambda w: w <> '') as raw_words
    from titles
),
readings as (  -- per title both readings side by side: article dropped (KITAB's rule) and kept
    select book_id, author_qid, first_year, title, raw_words as kept,
           case when len(raw_words) > 1 and raw_words[1] in ('the', 'a', 'an') then raw_words[2:]
                else raw_words end as dropped
    from split
),
facts as (
    select book_id, author_qid, first_year, len(dropped) as n_words_d, len(kept) as n_words_k,
           case when len(dropped) > 0 and regexp_matches(left(dropped[1], 1), '^[a-z]$') then left(dropped[1], 1) end
               as first_d,
           case when len(kept) > 0 and regexp_matches(left(kept[1], 1), '^[a-z]$') then left(kept[1], 1) end
               as first_k,
           case when len(dropped) > 0 and regexp_matches(right(dropped[len(dropped)], 1), '^[a-z]$')
                then right(dropped[len(dropped)], 1) end as last_d,
           case when len(kept) > 0 and regexp_matches(right(kept[len(kept)], 1), '^[a-z]$')
                then right(kept[len(kept)], 1) end as last_k
    from readings
),
attr as (  -- each attribute claim's constraint, its spec read once (not once per title)
    select cl.query_id, c.author_qid, json_extract_string(c.spec, '$.type') as kind, c.entity_kind,
           json_extract_string(c.spec, '$.letter') as letter, cast(json_extract(c.spec, '$.count') as integer) as n,
           cast(json_extract(c.spec, '$.from') as integer) as y_from, cast(json_extract(c.spec, '$.to') as integer) as y_to,
           case when cast(json_extract(c.spec, '$.present') as boolean) then 'yes' else 'no' end as wanted_state
    from claims cl join constraints c on c.constraint_id = cl.constraint_id
    where cl.kind = 'attribute'
),
hits as (  -- per claim and title, each reading: true / false / null (unknown: then no false claim)
    -- The one place that names constraint types: this check restates each type's rule itself
    -- (it must not ask tasks/constraints' Spec.claim_holds), so a type with claims and no rule
    -- here comes out 'undetermined' (a failing data test), never silently passed.
    select a.query_id,
           case
               when a.kind = 'starts_with' then coalesce(f.first_d = a.letter, false)
               when a.kind = 'ends_with' then coalesce(f.last_d = a.letter, false)
               when a.kind = 'word_count' then f.n_words_d = a.n
               when a.kind = 'year_range' then f.first_year between a.y_from and a.y_to
           end as hit_d,
           case
               when a.kind = 'starts_with' then coalesce(f.first_k = a.letter, false)
               when a.kind = 'ends_with' then coalesce(f.last_k = a.letter, false)
               when a.kind = 'word_count' then f.n_words_k = a.n
               when a.kind = 'year_range' then f.first_year between a.y_from and a.y_to
           end as hit_k
    from attr a join facts f on f.author_qid = a.author_qid
    where a.entity_kind is null
    union all
    -- any entity kind: the book's state, the same in both readings, so one row per book (not per
    -- title: joining book_entities per title made 9.4 million rows at 100,000 authors)
    select query_id, hit, hit
    from (
        select a.query_id,
               case when e.state = a.wanted_state then true
                    when coalesce(e.state, 'unsure') = 'unsure' then null else false end as hit
        from attr a join books b on b.author_qid = a.author_qid
             left join book_entities e on e.book_id = b.book_id and e.kind = a.entity_kind
        where a.entity_kind is not null
    )
),
attr_truth as (  -- true: one title has it under both readings; false: none under either, none unknown
    select query_id,
        case when bool_or(coalesce(hit_d, false) and coalesce(hit_k, false)) then true
             when not bool_or(coalesce(hit_d, false) or coalesce(hit_k, false))
                  and not bool_or(hit_d is null or hit_k is null) then false end as truth
    from hits group by query_id
),
quoted_keys as (  -- every key the quoted book's titles have: match keys and lower-cased titles
    select cl.query_id, k.key
    from claims cl join title_variants v on v.book_id = cl.book_id,
         unnest([v.match_key, lower(v.title)]) as k(key)
    where cl.kind = 'authorship'
    union
    select query_id, lower(title) from claims where kind = 'authorship'
),
author_keys as (  -- the keys of every author's titles (match keys, lower-cased titles) that some
    -- quoted book has: no other key can make an authorship claim undetermined (all of them did
    -- not fit DuckDB's 2 GB at 100,000 authors)
    select author_qid, match_key as key from title_variants where match_key in (select key from quoted_keys)
    union
    select author_qid, lower(title) from title_variants where lower(title) in (select key from quoted_keys)
),
authorship_named as (  -- the named author has a book with exactly the claimed title
    -- (one equi-join on author and title: a join on the author alone, filtered by title, made
    -- 10 million rows at 100,000 authors and did not fit DuckDB's 2 GB)
    select distinct cl.query_id
    from claims cl semi join titles named on named.author_qid = cl.claim_author_qid and named.title = cl.title
    where cl.kind = 'authorship'
),
authorship_near as (  -- some title of the named author shares a key with the quoted book's titles
    select distinct cl.query_id
    from claims cl join quoted_keys q on q.query_id = cl.query_id
         join author_keys k on k.author_qid = cl.claim_author_qid and k.key = q.key
    where cl.kind = 'authorship'
),
authorship_truth as (  -- joins, not correlated subqueries: at 10,000 authors those took 13 minutes
    select cl.query_id,
        case when cl.query_id in (select query_id from authorship_named) then true
             when cl.query_id not in (select query_id from authorship_near) then false end as truth
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
