"""Finding the chunks that answer a question: dense, keyword and hybrid retrieval, fusion, re-scoring,
diversity, the query cache, and the request/response dataclasses of the retrieval API."""
