"""Pipeline stages. Each module holds pure functions over rows (lists of dicts); the thin
Prefect task wrappers live in ``tasks/steps.py``, and ``flows/`` only composes them."""
