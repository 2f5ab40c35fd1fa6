-- Every author without an Open Library match has a rejects row saying why.
SELECT a.release, a.qid
FROM sampled_authors a
WHERE a.match_method = 'unmatched'
  AND NOT EXISTS (SELECT 1 FROM rejects r
                  WHERE r.release = a.release AND r.record_kind = 'author' AND r.record_id = a.qid
                    AND r.stage = 'match_openlibrary')
