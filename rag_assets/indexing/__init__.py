"""The ingest service: what `rag ingest`, `rag ingest-doc` and `RAGPipeline.ingest` / `delete_documents`
call to bring a corpus's index up to date with its folder. It decides what to run (a look at the
folder, the catalog run if something moved, the stale documents) and runs each document through the
corpus's Dagster assets (rag_assets.orchestration), so every ingest shows up in the UI as runs."""
