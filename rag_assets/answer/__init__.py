"""Answers with [Source N] citations from an OpenAI-compatible chat model, over retrieved chunks."""
