"""`rag serve` and `rag mcp`: one long-lived process that keeps each corpus's RAGPipeline warm and
answers over HTTP/JSON (http_app) and the Model Context Protocol (mcp_tools), both over one
IndexService (service). Importing this package imports nothing: `rag query` reads the server file
(server_file) with the standard library only."""
