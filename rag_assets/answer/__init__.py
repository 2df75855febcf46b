"""Answers with [Source N] citations from an OpenAI-compatible chat model, over retrieved chunks
(answer_question, which retrieves them with a RAGPipeline, is rag_assets.answering)."""
