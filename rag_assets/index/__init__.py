"""What an ingest leaves behind and readers read: the Chroma store, the state database (stage records,
catalog, embedding cache, index generation), locks and the index invariants. The search snapshot built
from the store (BM25, headings, rows, vectors) is the retrieval package's (rag_assets.retrieval.snapshot)."""
