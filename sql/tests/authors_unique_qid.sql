-- One authors row per author and release.
SELECT release, qid, count(*) AS n FROM authors GROUP BY ALL HAVING count(*) > 1
