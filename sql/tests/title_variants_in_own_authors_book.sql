-- Every variant belongs to an existing book of the same author: no cluster spans authors.
select v.release, v.variant_id, v.book_id
from title_variants v
left join books b on b.release = v.release and b.book_id = v.book_id and b.author_qid = v.author_qid
where b.book_id is null
