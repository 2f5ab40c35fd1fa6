-- One works_raw row per (release, author, work): pages that overlap are merged on fetch.
SELECT release, author_qid, work_key, count(*) AS n FROM works_raw GROUP BY ALL HAVING count(*) > 1
