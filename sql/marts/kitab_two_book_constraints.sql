-- KITAB's KITAB-TWO-BOOK-CONSTRAINTS.json: queries with two book constraints besides the
-- author; constraint_type is a stringified list (['starts-with', 'publishing-year']) and
-- constraints holds both criteria joined by ", ". Needs kitab_book_constraints.
create or replace view kitab_two_book_constraints as
select * exclude (n_constraints)
from kitab_book_constraints
where n_constraints = 2
order by release, "# of sitelinks" desc, "Author", constraint_id, query_id;
