-- KITAB's mapped_books: one title per mapped book, the first of its titles that satisfies the
-- constraint (constraints) or the whole query (queries); S counts them.
select release, constraint_id as id from constraints
where len(mapped_titles) <> n_mapped or len(satisfying_titles) <> n_mapped
   or mapped_titles <> list_transform(satisfying_titles, lambda titles: titles[1])
   or list_bool_or(list_transform(satisfying_titles, lambda titles: len(titles) = 0))
union all
select release, query_id from queries
where len(mapped_titles) <> n_mapped or len(mapped_book_ids) <> n_mapped
