"""The words every layer shares, at the bottom of the package: the retrieval modes (modes), what a
chunk embeds and keyword-indexes (index_text) and the markup that is not prose (markup). Nothing here
imports another part of rag_assets but this package, so the writer (ingest) and the readers
(retrieval, evaluation, config, the CLI) agree without importing each other."""
