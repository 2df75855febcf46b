"""document_catalog's metadata: the pages its scope left out, as a bounded table."""

from rag_assets.models import Catalog
from rag_assets.orchestration.catalog_asset import LEFT_OUT_ROWS, left_out_table


def test_the_left_out_table_is_bounded_and_says_where_the_rest_are():
    left_out = {f"fr/page-{i:03}.md": "translation" for i in range(LEFT_OUT_ROWS + 50)}
    catalog = Catalog("/docs", [], left_out={**left_out, "_drafts/a.md": "generator"},
                      left_out_languages={path: "fr" for path in left_out})
    metadata = left_out_table(catalog, "handbook")
    records = [r.data for r in metadata["left_out_pages"].records]
    assert len(records) == LEFT_OUT_ROWS == 200
    assert records[0] == {"page": "_drafts/a.md", "reason": "generator", "language": ""}  # by path
    assert records[1] == {"page": "fr/page-000.md", "reason": "translation", "language": "fr"}
    assert metadata["left_out_pages_shown"].value == "200 of 251; every one: rag corpora --left-out handbook"
    assert left_out_table(Catalog("/docs", []), "handbook") == {}
