-- Every query as a KITAB row, with KITAB's column names and formats: lists are stringified
-- Python lists (KITAB's consumers ast.literal_eval them), all_books entries are
-- "Title (YYYY)" (just "Title" without a year) sorted by title, raw_books are the distinct
-- titles fetched before cleaning that are the author's own books (both per author:
-- kitab_author_books.sql).
-- Two columns of ours follow KITAB's: query_id (links back
-- to `queries`) and release (every join stays inside one release: an author sampled but not
-- released in one release may be sampled again in another). The views
-- kitab_one_book_constraints and kitab_two_book_constraints select from this one (this file
-- sorts before theirs, so running sql/marts/ in name order creates it first).

-- s -> a Python string literal: repr(s) for printable text (double quotes when s has a '
-- and no "), and always a literal that ast.literal_eval reads back as s (backslash, quote,
-- newline, CR, tab and NUL escaped; other characters are valid inside a literal as they are).
create or replace macro kitab_py_str(s) as
    case when contains(s, '''') and not contains(s, '"')
         then '"' || replace(replace(replace(replace(replace(s, '\', '\\'), chr(10), '\n'), chr(13), '\r'), chr(9), '\t'), chr(0), '\x00') || '"'
         else '''' || replace(replace(replace(replace(replace(replace(s, '\', '\\'), '''', '\'''), chr(10), '\n'), chr(13), '\r'), chr(9), '\t'), chr(0), '\x00') || ''''
    end;
-- list of strings -> its Python repr, e.g. ['Beloved (1987)', 'Jazz (1992)']; NULL -> []
create or replace macro kitab_py_list(xs) as
    '[' || array_to_string(list_transform(coalesce(xs, []::varchar[]), lambda t: kitab_py_str(t)), ', ') || ']';

create or replace view kitab_book_constraints as
select
    a.name                            as "Author",
    cast(a.birth_year as bigint)      as "Birth Year",
    cast(a.sitelinks as bigint)       as "# of sitelinks",
    cast(q.kitab_index as bigint) as constraint_id,
    q.kitab_constraint_type           as constraint_type,
    q.constraints                     as constraints,
    kitab_py_list(q.mapped_titles)    as mapped_books,
    kitab_py_list(ab.all_books)       as all_books,
    kitab_py_list(ab.raw_books)       as raw_books,
    q.query_id                        as query_id,
    -- issue 28: the books this query's key leaves out (an entity state unsure), by canonical
    -- title as all_books lists them (no year), sorted: neither required nor forbidden
    -- (the author's own books: the key's; naming the author lets DuckDB join instead of
    -- testing every book of the release against every query, hours at 100,000 authors)
    kitab_py_list((select list(b.canonical_title order by b.canonical_title, b.book_id) from books b
                   where b.release = q.release and b.author_qid = q.author_qid
                     and list_contains(q.unsure_book_ids, b.book_id)))
                                      as unsure_books,
    q.release                         as release,
    q.n_constraints                   as n_constraints
from queries q
join authors a on a.release = q.release and a.qid = q.author_qid
left join kitab_author_books ab on ab.release = q.release and ab.author_qid = q.author_qid;
