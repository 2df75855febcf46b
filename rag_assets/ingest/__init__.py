"""Ingestion, stage by stage (no Dagster): discovery -> frontmatter -> markdown blocks -> chunks -> ids,
and the stage runner that records each document's progress (stages.py), the catalog and change detection."""
