-- Works are only fetched for sampled authors with an Open Library match, under that author key.
SELECT w.release, w.author_qid, w.ol_author_key
FROM works_raw w
LEFT JOIN sampled_authors a ON a.release = w.release AND a.qid = w.author_qid AND a.ol_author_key = w.ol_author_key
WHERE a.qid IS NULL
