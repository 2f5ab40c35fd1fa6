select release, book_id, count(*) as n from books group by all having count(*) > 1
