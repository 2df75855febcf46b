"""What a page says of itself, whatever its frontmatter's format, and what its generator does with it:
small trees written here, discovery over them (the attacker's round on scope included)."""

import datetime as dt
from dataclasses import replace
from pathlib import Path

from rag_assets.ingest import discovery
from rag_assets.ingest.discovery import discover
from rag_assets.ingest.page_facts import PageFacts, exclusion, facts_of
from rag_assets.ingest.scope import ScopeSettings
from rag_assets.models import FACTS_VERSION, Catalog
from rag_assets_tests.support.language_samples import EN


def write(root: Path, rel: str, text: str, newline: str = "\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


def scoped(root: Path, scope: ScopeSettings | None = None) -> tuple[list[str], dict[str, str]]:
    catalog = discover(root, scope=scope)
    return sorted(d.doc_path for d in catalog.documents), catalog.left_out


def test_drafts_are_seen_in_every_frontmatter_format(tmp_path):
    write(tmp_path, "kept.md", f"# Kept\n\n{EN}\n")
    write(tmp_path, "toml.md", f'+++\ntitle = "Upcoming"\ndate = 2024-01-01\ndraft = true\n+++\n\n{EN}\n')  # hugo new
    write(tmp_path, "json.md", f'{{\n  "title": "Upcoming",\n  "draft": true\n}}\n\n{EN}\n')
    write(tmp_path, "bom.md", f"\ufeff---\ntitle: Upcoming\ndraft: true\n---\n\n{EN}\n")
    write(tmp_path, "crlf-bom.md", f"\ufeff+++\ndraft = true\n+++\n\n{EN}\n", newline="\r\n")
    pages, left_out = scoped(tmp_path)
    assert pages == ["kept.md"]
    assert left_out == {"toml.md": "draft", "json.md": "draft", "bom.md": "draft", "crlf-bom.md": "draft"}


def test_no_number_of_other_true_keys_hides_a_draft(tmp_path):
    many = "".join(f"flag{i:02}: true\n" for i in range(60))
    write(tmp_path, "after.md", f"---\n{many}draft: true\n---\n# After\n\n{EN}\n")
    # a key a setting names is seen among the first 32 others (the generators' keys whatever their number)
    some = "".join(f"flag{i:02}: true\n" for i in range(25))
    write(tmp_path, "internal.md", f"---\n{some}internal: true\n---\n# Internal\n\n{EN}\n")
    write(tmp_path, "kept.md", f"---\n{many}---\n# Kept\n\n{EN}\n")
    pages, left_out = scoped(tmp_path, ScopeSettings(skip_keys=("draft", "internal")))
    assert pages == ["kept.md"] and left_out == {"after.md": "draft", "internal.md": "internal"}


def test_false_values_of_the_generators_keys_are_recorded():
    facts = PageFacts.parse(facts_of("---\npagefind: false\nsearch:\n  exclude: true\ndraft: false\n"
                                     "build:\n  render: Never\n---\n# Page\n").format())
    assert facts.says("pagefind") == "false" and facts.says("search.exclude") == "true"
    assert facts.says("build.render") == "Never" and facts.flags == ()
    assert facts_of("# no frontmatter\n").format().startswith(f"{FACTS_VERSION}|")


def test_what_each_generator_does_not_publish_or_search_is_left_out_by_reason(tmp_path):
    (tmp_path / "astro.config.mjs").write_text("export default {}\n")
    docs = "src/content/docs"
    write(tmp_path, f"{docs}/index.md", f"---\ntitle: Home\n---\n{EN}\n")
    write(tmp_path, f"{docs}/internal.md", "---\ntitle: Internal\npagefind: false\n---\nA page the site search leaves out.\n")
    write(tmp_path, f"{docs}/later.md", "---\ntitle: Later\ndraft: true\n---\nSoon.\n")
    write(tmp_path, f"{docs}/hidden.md", "---\ntitle: Hidden\nunlisted: true\n---\nUnlisted.\n")
    write(tmp_path, f"{docs}/vp.md", "---\nsearch: false\n---\n# VitePress page its search leaves out\n")
    write(tmp_path, f"{docs}/material.md", "---\nsearch:\n  exclude: true\n---\n# Material page\n")
    write(tmp_path, f"{docs}/boosted.md", "---\nsearch:\n  boost: 2\npagefind: true\n---\n# Boosted\n")
    pages, left_out = scoped(tmp_path)
    assert pages == [f"{docs}/boosted.md", f"{docs}/index.md"]
    assert left_out == {f"{docs}/internal.md": "search_excluded", f"{docs}/later.md": "draft",
                        f"{docs}/hidden.md": "unlisted", f"{docs}/vp.md": "search_excluded",
                        f"{docs}/material.md": "search_excluded"}
    pages, left_out = scoped(tmp_path, ScopeSettings(ignore_files=False))  # the generator's rules off
    assert f"{docs}/internal.md" in pages and left_out == {f"{docs}/later.md": "draft"}


def test_hugo_build_options_headless_bundles_and_dates(tmp_path):
    (tmp_path / "hugo.toml").write_text('title = "Site"\n')
    future = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    past = (dt.date.today() - dt.timedelta(days=30)).isoformat()
    pages = {
        "content/now.md": f'+++\ntitle = "Now"\ndate = {past}\n+++\n{EN}\n',
        "content/never.md": '+++\n[build]\n  render = "never"\n+++\nNot rendered.\n',
        "content/unlisted.md": '+++\n[build]\n  list = "never"\n+++\nIn no list.\n',
        "content/bundle/index.md": "---\nheadless: true\n---\nA headless bundle.\n",
        "content/scheduled.md": f'+++\npublishDate = {future}\n+++\nNot yet.\n',
        "content/dated.md": f'---\ndate: {future}\n---\nIts date is its publish date.\n',
        "content/expired.md": f'{{\n  "expiryDate": "{past}"\n}}\nGone.\n',
    }
    for rel, text in pages.items():
        write(tmp_path, rel, text)
    kept, left_out = scoped(tmp_path)
    assert kept == ["content/now.md"]
    assert left_out == {"content/never.md": "not_rendered", "content/unlisted.md": "unlisted",
                        "content/bundle/index.md": "headless", "content/scheduled.md": "scheduled",
                        "content/dated.md": "scheduled", "content/expired.md": "expired"}


def test_a_future_date_outside_hugo_is_just_a_date():
    """A Docusaurus blog post dated tomorrow is published; YAML frontmatter outside a Hugo site says nothing."""
    future = (dt.date.today() + dt.timedelta(days=3)).isoformat()
    facts = facts_of(f"---\ndate: {future}\n---\n# Post\n")
    assert exclusion(facts, "docusaurus") is None and exclusion(facts, "") is None
    assert exclusion(facts, "hugo") == "scheduled"
    assert exclusion(facts_of(f"+++\ndate = {future}\n+++\n"), "") == "scheduled"  # Hugo's own format


def test_language_keys_that_name_a_programming_language_declare_nothing():
    assert (facts_of("---\nlanguage: ts\n---\n").declared, facts_of("---\nlanguage: ts\n---\n").named) == ("", "ts")
    assert facts_of("---\nlanguage: pt-BR\n---\n").declared == "pt-BR"
    assert facts_of("---\nlang: es\n---\n").declared == "es"
    assert facts_of("---\nlanguage: typescript\n---\n").named == ""


def test_facts_of_an_older_version_are_read_again_once(tmp_path, monkeypatch):
    write(tmp_path, "draft.md", f"+++\ndraft = true\n+++\n{EN}\n")
    catalog = discover(tmp_path)
    assert catalog.left_out == {"draft.md": "draft"}
    # as the version before recorded it (TOML unread: no flags), its stats unchanged
    stale = replace(catalog.left_out_refs[0], facts="v1|lang=|text=en|flags=")
    before = Catalog(catalog.docs_dir, [stale])
    opened = []
    real = discovery._fingerprint
    monkeypatch.setattr(discovery, "_fingerprint", lambda *a, **k: opened.append(a[1]) or real(*a, **k))
    again = discover(tmp_path, known=before)
    assert opened == ["draft.md"] and again.left_out == {"draft.md": "draft"}
    opened.clear()
    assert discover(tmp_path, known=again).left_out == {"draft.md": "draft"} and opened == []  # once


def test_a_draft_after_a_long_frontmatter_is_seen(tmp_path):
    """The facts are read from the first 64 KB, and from the page's first MiB when its header runs longer."""
    padding = "".join(f"note{i:05}: {'x' * 60}\n" for i in range(1500))  # ~100 KB of keys
    write(tmp_path, "long.md", f"---\n{padding}draft: true\n---\n# Long\n\n{EN}\n")
    write(tmp_path, "kept.md", f"# Kept\n\n{EN}\n")
    assert scoped(tmp_path) == (["kept.md"], {"long.md": "draft"})
