-- One sampled_authors row per author and release.
SELECT release, qid, count(*) AS n FROM sampled_authors GROUP BY ALL HAVING count(*) > 1
