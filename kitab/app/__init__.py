"""The ``kitab`` command: the CLI, the demo, the run summary and progress display, the
plain-process stack and the Prefect server guard. The only layer that imports every other."""
