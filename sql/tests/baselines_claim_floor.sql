-- The claim pairs' floor (issue 38): no baseline that reads the wording (table baselines:
-- wording-rule, naive-bayes; always-true and the coin are at chance by construction) may score
-- an overall pair accuracy above chance + 0.07 (0.25 + 0.07: kitab/release/validity, CHANCE and
-- MARGIN) with its one-sided 99.9% Wilson bound (z = 3.29) above chance: a release whose pairs
-- can be answered from their wording fails. The bound keeps a fair small release from failing
-- on luck (at 48-90 pairs the 95% bound failed 3% of fair releases per baseline; this one fails
-- under 0.1%) and still refuses a release whose floor is far off (10 authors: 0.467 of 60 pairs).
select release, baseline, value, low, high, n, trained_on
from baselines
where task = 'claims' and metric = 'pair_accuracy' and dimension = 'overall'
  and baseline in ('wording-rule', 'naive-bayes')
  and value > 0.25 + 0.07
  and (value + 3.29 * 3.29 / (2 * n)
       - 3.29 * sqrt(value * (1 - value) / n + 3.29 * 3.29 / (4 * n * n))) / (1 + 3.29 * 3.29 / n) > 0.25
