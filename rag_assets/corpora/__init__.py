"""The project's defs folder (Dagster Components): one `rag_assets.MarkdownCorpus` per corpus, and the
resources they share. `dg scaffold defs rag_assets.MarkdownCorpus NAME` adds a corpus here."""
