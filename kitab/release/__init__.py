"""Readers of committed releases: the Hugging Face export and push, the report, the prompts
and the evaluation of models' answers. Imports kitab.core, kitab.sources and tasks."""
