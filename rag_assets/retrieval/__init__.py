"""Finding the chunks that answer a question: the search snapshot (BM25, headings, rows and vectors of
every chunk), dense, keyword and hybrid retrieval, fusion, re-scoring, diversity, context windows, the
query cache, and the request/response dataclasses of the retrieval API."""
