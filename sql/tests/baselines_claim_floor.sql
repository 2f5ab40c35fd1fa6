-- The claim pairs' floor (issue 38): no no-knowledge baseline (table baselines: always-true,
-- coin, wording-rule, naive-bayes) may score an overall pair accuracy above chance + 0.07
-- (0.25 + 0.07: kitab/release/validity, CHANCE and MARGIN) with its 95% interval's low end
-- above chance, i.e. a release whose pairs can be answered from their wording fails. (The low
-- end keeps a small release's coin from failing on luck: a coin over 60 pairs tops 0.32 about one
-- time in eleven.)
select release, baseline, value, low, high, n, trained_on
from baselines
where task = 'claims' and metric = 'pair_accuracy' and dimension = 'overall'
  and value > 0.25 + 0.07 and low > 0.25
