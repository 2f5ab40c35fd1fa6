-- kappa = 1 - S/N in [0, 1], unsatisfiable exactly when S = 0, S counts the mapped books;
-- a NULL anywhere is a failure too.
select release, constraint_id, n_mapped, n_books, constrainedness, satisfiable
from constraints
where n_books is null or n_books <= 0 or constrainedness is null or satisfiable is null
   or abs(constrainedness - (1 - n_mapped / n_books)) > 1e-9
   or constrainedness < 0 or constrainedness > 1
   or satisfiable is distinct from (n_mapped > 0)
   or n_mapped is distinct from len(mapped_book_ids)
