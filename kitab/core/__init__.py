"""Infrastructure every layer may use: configuration, errors, the Parquet handoff between
steps, the warehouse, locking, progress, versions. Imports nothing else of kitab."""
