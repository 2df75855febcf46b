"""Every assumption rag_assets makes about Dagster's private modules, in one place.

Dagster's public API does not cover what the project needs for speed and for its own launcher: the
stock SQLite event-log storage it batches (event_log), the run launcher base and the in-process run
execution its warm workers use (run_launcher, run_execution), the workspace the CLI's fan-out
launches runs through (workspace), the partition-range run tags (tags), the component declarations
of a project (components), the layout and table of the SQLite run storage the no-op check reads
(run_storage), how a log record says a step was interrupted, how a run says it was, and the
interrupt capture held around the CLI's runs (interrupts: a stopped run ends CANCELED), and the
compute-log manager the CLI's in-process runs go without (compute_logs). Each assumption is one
small named function here, and one test in
rag_assets_tests/orchestration/internals/ that names it when it breaks: a Dagster upgrade that
breaks one fails there, in one place, not somewhere unknown. No module outside this package imports
``dagster._*`` (the import-linter contract in pyproject.toml).
"""
