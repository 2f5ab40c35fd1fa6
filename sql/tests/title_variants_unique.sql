-- One variant per (author, work): a kept work is in exactly one cluster.
select release, author_qid, work_key, count(*) as n from title_variants group by all having count(*) > 1
