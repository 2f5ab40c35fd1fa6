"""``kitab evaluate``: KITAB's metrics of a model's answers to a release's queries
(answers.py: the answers file and one answer's titles; metrics.py: the metrics, pure;
run.py: the release's ground truth, the ``evaluations`` table). docs/evaluate.md."""
