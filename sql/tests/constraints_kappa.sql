-- kappa = 1 - S/N in [0, 1], and unsatisfiable exactly when S = 0.
select release, constraint_id, n_mapped, n_books, constrainedness, satisfiable
from constraints
where abs(constrainedness - (1 - n_mapped / n_books)) > 1e-9
   or constrainedness < 0 or constrainedness > 1
   or satisfiable <> (n_mapped > 0)
   or n_mapped <> len(mapped_book_ids)
