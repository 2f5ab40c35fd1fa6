"""The validity battery (issue 38): no-knowledge baselines of each task, scored at publish time
and stored with the release (table ``baselines``); each task's floor and ceiling (docs/claims.md,
docs/evaluate.md)."""
