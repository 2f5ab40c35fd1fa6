-- Released authors have at least 5 books (the paper's minimum after cleaning).
select release, author_qid, count(*) as books from books group by all having count(*) < 5
