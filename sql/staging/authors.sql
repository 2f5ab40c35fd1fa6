-- The released authors: what a user means by "authors". The stored table `authors` holds every
-- sampled author with its Open Library match, also those a later stage rejected; its view is
-- `sampled_authors` (kitab/warehouse.py VIEW_NAMES). An author is released when its release
-- lists it in released_authors (publish writes both in the same commit). Views only: the
-- Parquet files are what they were.
create or replace view authors as
select s.*
from sampled_authors s
where exists (select 1 from released_authors r where r.release = s.release and r.qid = s.qid);
