"""Prefect flows: composition only; the logic lives in ``tasks/``."""
