"""What an ingest leaves behind and readers read: the Chroma store, the BM25 keyword index, the state
database (stage records, catalog, embedding cache, index generation), locks and the index invariants."""
