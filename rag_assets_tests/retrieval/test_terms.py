"""BM25 terms: the same for chunks and queries, in the chunk's language."""


def test_a_chunks_language_chooses_its_stemmer_and_english_is_unchanged():
    from rag_assets.retrieval.terms import query_terms, tokenize

    english = "How do I configure streaming responses? content_block_delta"
    assert tokenize(english) == tokenize(english, "en") == tokenize(english, "und") == tokenize(english, "en-US")
    assert tokenize("las respuestas configuradas", "es") == ["las", "respuest", "configur"]
    assert tokenize("如何安装软件 install", "zh-CN") == ["如何", "何安", "安装", "装软", "软件", "instal"]
    assert tokenize("如何安装软件", "en") == ["如何安装软件"]  # an English chunk's Chinese is left whole, as before
    assert query_terms(english, ["en"]) == tokenize(english)
    assert query_terms("respuestas configuradas", ["en", "es"]) == ["respuesta", "configurada", "respuest", "configur"]
