-- KITAB's metrics of each evaluation (release, model, answers file), averaged over its queries
-- (a rate a query does not have, e.g. no clusters, is left out of that mean) and grouped as the
-- paper reports them: all queries, per constraint type (a two-constraint query counts under
-- each of its types), per constrainedness bin and per author-popularity bin. n_constraints
-- NULL: one- and two-constraint queries together. bin_order sorts the bins (smallest κ or
-- sitelinks in the bin). Every query of the release has a row: an unanswered one (answered =
-- false) lists nothing: completeness and all_correct count it as wrong (against each mean);
-- coverage is the share of the bin's queries the answers file answered. abstention_rate: the share of the bin's
-- answered rows whose answer lists no titles to a satisfiable query; cut_rate: the share of its
-- answered rows whose answer the endpoint cut (finish_reason = 'length'); both over answered rows. The three rates over listed books are NULL for a row
-- that lists nothing (abstained or unanswered), so their means are over rows that listed
-- something; completeness and all_correct count those rows as wrong. With kitab answer
-- --samples N every sample is a row: the means pool the samples. stale: the evaluation scored
-- another version of the release (its queries' sha256 is not the ledger's: the release was
-- replaced since); kitab report and the leaderboard leave stale ones out unless asked.
create or replace view evaluation_summary as
with scored as (
    select e.* exclude (queries_sha256),
           e.queries_sha256 is distinct from json_extract_string(r.checksums, '$.queries') as stale
    from evaluations e left join releases r using (release)
),
parts as (
    select release, model, answers_sha256, stale, n_constraints, 'all' as dimension, 'all queries' as bin,
           0.0 as bin_order, answered, abstained, cut, satisfied_rate, unsatisfied_rate, not_from_author_rate,
           completeness, all_correct
    from scored
    union all
    select release, model, answers_sha256, stale, n_constraints, 'type', unnest(type_labels), 0.0,
           answered, abstained, cut, satisfied_rate, unsatisfied_rate, not_from_author_rate, completeness, all_correct
    from scored
    union all
    select release, model, answers_sha256, stale, n_constraints, 'kappa', kappa_bin, constrainedness,
           answered, abstained, cut, satisfied_rate, unsatisfied_rate, not_from_author_rate, completeness, all_correct
    from scored
    union all
    select release, model, answers_sha256, stale, n_constraints, 'popularity', popularity_bin, cast(sitelinks as double),
           answered, abstained, cut, satisfied_rate, unsatisfied_rate, not_from_author_rate, completeness, all_correct
    from scored
)
select release, model, answers_sha256, n_constraints, dimension, bin,
       bool_or(stale)                  as stale,
       min(bin_order)                  as bin_order,
       count(*)                        as queries,
       count(*) filter (where answered) as answered,
       avg(cast(answered as double))   as coverage,
       avg(cast(abstained as double)) filter (where answered) as abstention_rate,
       avg(cast(cut as double)) filter (where answered)       as cut_rate,
       avg(satisfied_rate)             as satisfied,
       avg(unsatisfied_rate)           as unsatisfied,
       avg(not_from_author_rate)       as not_from_author,
       avg(completeness)               as completeness,
       avg(cast(all_correct as double)) as all_correct
from parts
group by grouping sets ((release, model, answers_sha256, n_constraints, dimension, bin),
                        (release, model, answers_sha256, dimension, bin));
