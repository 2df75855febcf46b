"""The templates of an MkDocs site that show none of a page's markdown, read from its theme's custom_dir
(small sites written here), and the pages naming them left out by discovery with a reason."""

from pathlib import Path

from rag_assets.ingest.discovery import discover
from rag_assets.ingest.page_templates import NO_CONTENT, REDIRECT, mkdocs_templates

HOME = ('{% extends "main.html" %}\n{% block tabs %}{{ super() }}<section><h1>Docs that work</h1></section>'
        '{% endblock %}\n{% block content %}{% endblock %}\n{% block footer %}{% endblock %}\n')
MAIN = '{% extends "base.html" %}\n{% block scripts %}{{ super() }}<script src="x.js"></script>{% endblock %}\n'


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def site(tmp_path: Path, templates: dict[str, str], theme: str = "material") -> Path:
    write(tmp_path, "mkdocs.yml", f"site_name: x\ntheme:\n  name: {theme}\n  custom_dir: overrides\n")
    for name, text in templates.items():
        write(tmp_path, f"overrides/{name}", text)
    return tmp_path


def test_which_templates_show_no_page(tmp_path):
    templates = {
        "home.html": HOME,  # the content block emptied (Material's own landing page)
        "main.html": MAIN,  # the theme's base renders the content
        "landing.html": '{% extends "home.html" %}\n{% block tabs %}<p>Hi</p>{% endblock %}\n',  # inherits home's
        "wide.html": '{% extends "main.html" %}\n{% block content %}<div class="wide">{{ super() }}</div>{% endblock %}\n',
        "bare.html": "<html><body>{{ page.content }}</body></html>",
        "go.html": '<html><head><meta http-equiv="refresh" content="0;url={{ page.meta.location }}"></head></html>',
        "card.html": "<html><body><h1>{{ page.title }}</h1></body></html>",  # stands alone, no page.content
        "partials/content.html": "<div></div>",  # a partial: never a page's template
        "nested.html": ('{% extends "main.html" %}\n{% block content %}{% block inner %}<p>x</p>{% endblock %}'
                        '{{ super() }}{% endblock %}\n'),
    }
    assert mkdocs_templates(site(tmp_path, templates), {"theme": {"name": "material", "custom_dir": "overrides"}}) == {
        "redirect.html": REDIRECT, "home.html": NO_CONTENT, "landing.html": NO_CONTENT, "go.html": REDIRECT,
        "card.html": NO_CONTENT}
    # another theme has no redirect.html of its own; a custom_dir outside the site is not read
    assert mkdocs_templates(tmp_path, {"theme": {"name": "mkdocs", "custom_dir": "../elsewhere"}}) == {}
    assert mkdocs_templates(tmp_path, {"theme": "material"}) == {"redirect.html": REDIRECT}


def test_a_landing_page_and_a_redirect_page_are_left_out_by_their_template(tmp_path):
    site(tmp_path, {"home.html": HOME, "main.html": MAIN})
    write(tmp_path, "docs/index.md", "---\ntemplate: home.html\ntitle: X\n---\n\nWelcome to X.\n")
    write(tmp_path, "docs/insiders/index.md", "---\ntemplate: redirect.html\nlocation: getting-started/\n---\n")
    write(tmp_path, "docs/guide.md", "---\ntemplate: main.html\n---\n# Guide\n\nText.\n")
    write(tmp_path, "docs/setup.md", "# Setup\n\nText.\n")
    catalog = discover(tmp_path)
    assert sorted(d.doc_path for d in catalog.documents) == ["docs/guide.md", "docs/setup.md"]
    assert catalog.left_out == {"docs/index.md": "not_rendered", "docs/insiders/index.md": "redirect"}
