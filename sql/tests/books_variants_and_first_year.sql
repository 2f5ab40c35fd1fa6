-- A book's n_variants counts its variants and its first_year is their earliest year.
select b.release, b.book_id, b.n_variants, count(v.variant_id) as variants, b.first_year, min(v.year) as min_year
from books b
left join title_variants v on v.release = b.release and v.book_id = b.book_id
group by all
having b.n_variants <> count(v.variant_id) or b.first_year is distinct from min(v.year)
