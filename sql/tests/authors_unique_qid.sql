-- One authors row per writer and release.
SELECT release, qid, count(*) AS n FROM authors GROUP BY ALL HAVING count(*) > 1
