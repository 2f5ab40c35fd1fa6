-- KITAB's KITAB-ONE-BOOK-CONSTRAINTS.json: queries with one book constraint besides the
-- author. Needs kitab_book_constraints (kitab_book_constraints.sql) for the formatting.
create or replace view kitab_one_book_constraints as
select * exclude (n_constraints)
from kitab_book_constraints
where n_constraints = 1
order by release, "# of sitelinks" desc, "Author", constraint_id, query_id;
