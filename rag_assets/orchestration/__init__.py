"""The Dagster shell around the plain stages: assets, checks, sensors, schedules, resources, and the
code location's Definitions (in definitions.py, exported as `rag_assets.defs`)."""
