"""An MDX documentation site through `rag ingest` and `rag query`, as its maintainer would run it:
snippets inside the pages that import them, never pages of their own, no tag in any result."""

import json
import re

import pytest

from rag_assets_tests.cli.test_ingest import ingest_json, rag, store
from rag_assets_tests.support.mdx_site import write_mdx_site

pytestmark = pytest.mark.system

TAG = re.compile(r"</?[A-Z][\w.]*[\s/>]")


@pytest.fixture
def site(rag_env, dagster_home):
    docs = rag_env / "docs"
    for path in sorted(docs.rglob("*.md"), reverse=True):
        path.unlink()
    write_mdx_site(docs)
    return docs


def test_an_mdx_site_is_indexed_as_its_pages_read(site):
    summary, _ = ingest_json()
    assert summary["documents_discovered"] == 2 and summary["documents_failed"] == 0
    assert store().doc_paths() == {"guides/install.mdx", "learn/add_documents.mdx"}

    answer = json.loads(rag("query", "How do I add documents with the Python client?", "--top-k", "3", "--json").stdout)
    top = answer["results"][0]
    assert top["doc_path"] == "learn/add_documents.mdx"
    assert "client.index('movies').add_documents(movies)" in "\n".join(r["text"] for r in answer["results"])
    for result in answer["results"]:
        assert not TAG.search(result["text"]) and "import " not in result["text"]

    # editing the snippet re-ingests the page that shows it, and only that page
    (site / "snippets/samples/code_samples_add_movies_1.mdx").write_text(
        "```python Python\nclient.index('movies').update_documents(movies)\n```\n")
    edit, _ = ingest_json()
    assert edit["documents_processed"] == 1 and edit["documents_unchanged"] == 1
    answer = json.loads(rag("query", "update documents python", "--top-k", "3", "--json").stdout)
    assert "update_documents" in "\n".join(r["text"] for r in answer["results"])
