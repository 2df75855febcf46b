import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag_assets.errors import DocumentError
from rag_assets.ingest.frontmatter import MAX_ALIASES, MAX_DEPTH, decode, parse_document, read_document
from rag_assets.models import DocumentRef
from rag_assets_tests.support.hostile_corpus import billion_laughs


def ref(doc_path="guide/page.md", path="/nonexistent", module="guide"):
    return DocumentRef(doc_path, doc_path, path, module, None, 0, 0.0, "h" * 64)


def test_frontmatter_fields_and_other_keys_kept():
    text = "---\ntitle: Hello\ndescription: A page\ntags: [a, b]\nsource: Core Rules\nlast_update_date: 2024-05-01\n---\n# Heading\nBody\n"
    doc = parse_document(text, ref())
    assert (doc.title, doc.description, doc.tags) == ("Hello", "A page", ["a", "b"])
    assert doc.metadata["source"] == "Core Rules"
    assert doc.metadata["last_update_date"] == "2024-05-01"
    assert doc.metadata["module"] == "guide"
    assert doc.body == "# Heading\nBody\n" and doc.body_start_line == 8


def test_title_falls_back_to_first_h1_then_file_name():
    assert parse_document("intro\n```\n# not a title\n```\n# Real Title\n", ref()).title == "Real Title"
    assert parse_document("no headings here\n", ref("x/my-page.md")).title == "my-page"
    assert parse_document("---\ntags: x, y\n---\n## Only H2\n", ref("p.md")).title == "p"


def test_comma_separated_tags():
    assert parse_document("---\ntags: a, b ,c\n---\n", ref()).tags == ["a", "b", "c"]


def test_invalid_yaml_names_file_line_and_reason():
    with pytest.raises(DocumentError) as info:
        parse_document("---\ntitle: ok\nbad: [unclosed\nmore: x\n---\nbody\n", ref("bad.md"))
    err = info.value
    assert err.doc_path == "bad.md" and err.line is not None and err.line >= 3
    assert str(err).startswith("bad.md:") and "invalid YAML" in str(err)


def test_unclosed_frontmatter_and_non_mapping_are_errors():
    with pytest.raises(DocumentError, match="never closed"):
        parse_document("---\ntitle: x\n", ref())
    with pytest.raises(DocumentError, match="mapping"):
        parse_document("---\n- a\n- b\n---\n", ref())


def test_yaml_is_loaded_safely():
    with pytest.raises(DocumentError):
        parse_document("---\nx: !!python/object/apply:os.system ['echo pwned']\n---\n", ref())


def test_frontmatter_only_document():
    doc = parse_document("---\ntitle: Only\n---\n", ref())
    assert doc.title == "Only" and doc.body == ""


def test_decoding_policy():
    assert decode("\ufeff# Hi\r\nthere".encode("utf-8"), "a.md") == "# Hi\nthere"
    with pytest.raises(DocumentError, match="UTF-8"):
        decode("caf\xe9".encode("latin-1"), "latin.md")
    with pytest.raises(DocumentError, match="binary"):
        decode(b"\x89PNG\r\n\x1a\n\x00\x00", "image.md")


def test_vanished_file(tmp_path):
    with pytest.raises(DocumentError, match="vanished"):
        read_document(ref(path=str(tmp_path / "gone.md")))


# -- bounded YAML: alias bombs, recursive aliases, deep nesting ---------------------------------
@pytest.mark.system
def test_alias_bomb_is_refused_fast_and_in_bounded_memory():
    bomb = billion_laughs()
    assert len(bomb.encode()) < 480  # 9^9 = 387 million "lol"s once expanded
    # in a child with 1 GiB of address space and a deadline: without the guard, expanding the bomb
    # takes minutes and gigabytes, and the child dies instead of printing
    child = textwrap.dedent(
        """
        import json, sys, time
        from rag_assets.errors import DocumentError
        from rag_assets.ingest.frontmatter import parse_document
        from rag_assets.models import DocumentRef
        ref = DocumentRef("bomb.md", "bomb.md", "/nonexistent", None, None, 0, 0.0, "h" * 64)
        started = time.monotonic()
        try:
            parse_document(sys.stdin.read(), ref)
            outcome = {"error": None}
        except DocumentError as exc:
            outcome = {"error": str(exc), "line": exc.line}
        outcome["seconds"] = time.monotonic() - started
        # VmHWM: this program's own peak (ru_maxrss would include the forking parent's at fork time)
        with open("/proc/self/status") as status:
            outcome["peak_mb"] = next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) / 1024
        print(json.dumps(outcome))
        """
    )

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run([sys.executable, "-c", child], input=bomb, capture_output=True, text=True,
                          timeout=60, preexec_fn=limit_memory, env={**os.environ, "PYTHONPATH": _repo_root()})
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome = json.loads(proc.stdout)
    assert outcome["error"] is not None, "the bomb was expanded instead of refused"
    assert outcome["error"].startswith("bomb.md:") and "alias" in outcome["error"], outcome
    assert outcome["line"] is not None and 2 <= outcome["line"] <= 10
    assert outcome["seconds"] < 2.0 and outcome["peak_mb"] < 200, outcome


def _repo_root() -> str:
    import rag_assets

    return str(Path(rag_assets.__file__).resolve().parent.parent)


def test_normal_anchors_aliases_and_merge_keys_still_load():
    text = (
        "---\n"
        "title: Anchors\n"
        "defaults: &defaults {owner: docs-team, review: quarterly, tags: [guide, setup]}\n"
        "install: {<<: *defaults, review: monthly}\n"
        "upgrade: *defaults\n"
        "authors: &authors [ana, bo]\n"
        "reviewers: *authors\n"
        "maintainers: *authors\n"
        "blob: !!binary aGVsbG8=\n"
        "letters: !!set {b, a}\n"
        "---\n# Body\n"
    )
    doc = parse_document(text, ref())
    assert doc.metadata["install"] == {"owner": "docs-team", "review": "monthly", "tags": ["guide", "setup"]}
    assert doc.metadata["upgrade"] == doc.metadata["defaults"]
    assert doc.metadata["reviewers"] == doc.metadata["maintainers"] == ["ana", "bo"]
    assert doc.metadata["blob"] == "aGVsbG8=" and doc.metadata["letters"] == ["a", "b"]
    json.dumps(doc.metadata)  # what the stage record does with it


def test_too_many_aliases_are_refused_with_the_line():
    aliases = "\n".join(f"k{i}: *x" for i in range(MAX_ALIASES + 1))
    with pytest.raises(DocumentError, match=f"more than {MAX_ALIASES} YAML aliases") as info:
        parse_document(f"---\nbase: &x small\n{aliases}\n---\n", ref("many.md"))
    assert info.value.doc_path == "many.md" and info.value.line == MAX_ALIASES + 3
    # exactly the limit is fine
    aliases = "\n".join(f"k{i}: *x" for i in range(MAX_ALIASES))
    assert parse_document(f"---\nbase: &x small\n{aliases}\n---\n", ref()).metadata["k0"] == "small"


def test_a_few_aliases_of_a_long_value_are_refused_when_they_copy_too_much():
    long_value = "word " * 10_000  # 50 k characters, copied three times
    text = f"---\nnotes: &n \"{long_value}\"\na: *n\nb: *n\nc: *n\n---\n"
    with pytest.raises(DocumentError, match="alias bomb") as info:
        parse_document(text, ref("copies.md"))
    assert info.value.line == 4  # "b: *n", the copy that passes the limit
    assert "'b'" in str(info.value)
    # the same value without aliases is just a long header
    assert len(parse_document(f"---\nnotes: \"{long_value}\"\n---\n", ref()).metadata["notes"]) > 49_000


@pytest.mark.parametrize(
    "header, reason, line",
    [
        ("a: &x [1, *x]", "recursive YAML alias", 2),
        ("a: &x {k: [*x]}", "recursive YAML alias", 2),
        ("a: " + "[" * 2000 + "]" * 2000, "nested more than", 2),  # once a RecursionError
        ("deep: &d " + "[" * 30 + "]" * 30 + "\ndeeper: " + "[" * 30 + "*d" + "]" * 30, "once its aliases are expanded", 3),
    ],
    ids=["list-contains-itself", "mapping-contains-itself", "2000-levels", "aliases-nest-past-the-limit"],
)
def test_recursive_and_too_deep_frontmatter_is_refused(header, reason, line):
    with pytest.raises(DocumentError, match=reason) as info:
        parse_document(f"---\n{header}\n---\n", ref("deep.md"))
    assert info.value.line == line and str(info.value).startswith(f"deep.md:{line}:")


def test_nesting_within_the_limit_loads():
    depth = MAX_DEPTH - 2  # the root mapping and the scalar are levels too
    doc = parse_document("---\na: " + "[" * depth + "x" + "]" * depth + "\n---\n", ref())
    value = doc.metadata["a"]
    for _ in range(depth):
        value = value[0]
    assert value == "x"


def test_toml_and_json_frontmatter_and_a_bom_are_read_like_yaml():
    """Hugo writes TOML (`hugo new`) or JSON; an editor may save a byte-order mark before the YAML."""
    toml = ('+++\ntitle = "Install"\ndraft = true\ntags = ["setup", "cli"]\ndate = 2024-02-02T04:14:54-08:00\n'
            '[build]\n  render = "never"\n+++\n\n# Body\n')
    doc = parse_document(toml, ref())
    assert (doc.title, doc.tags, doc.metadata["draft"]) == ("Install", ["setup", "cli"], True)
    assert doc.metadata["date"] == "2024-02-02T04:14:54-08:00" and doc.metadata["build"] == {"render": "never"}
    assert doc.body == "\n# Body\n" and doc.body_start_line == 9
    as_json = '{\n  "title": "Install",\n  "draft": true,\n  "params": {"author": "Ann"}\n}\n\n# Body\n'
    doc = parse_document(as_json, ref())
    assert (doc.title, doc.metadata["draft"], doc.metadata["params"]) == ("Install", True, {"author": "Ann"})
    assert doc.body == "\n# Body\n" and doc.body_start_line == 6
    doc = parse_document("\ufeff---\ntitle: Install\ndraft: true\n---\n# Body\n", ref())
    assert (doc.title, doc.metadata["draft"], doc.body_start_line) == ("Install", True, 5)
    # an MDX expression at the start is body, not JSON
    assert parse_document("{/* a comment */}\n# Title\n", ref()).title == "Title"


@pytest.mark.parametrize("text, reason, line", [
    ('+++\ntitle = "x"\ndraft = yes\n+++\n', "invalid TOML frontmatter", 3),
    ('+++\ntitle = "x"\n', "frontmatter opened with '+++' is never closed", 1),
    ('{\n  "title": "x",\n}\n', "invalid JSON frontmatter", 3),
    ('{"title": "x"} trailing\n', "JSON frontmatter must end its line", 1),
    ("+++\n" + "a = " + "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2) + "\n+++\n", "nested more than", None),
])
def test_bad_toml_and_json_frontmatter_name_the_file_and_line(text, reason, line):
    with pytest.raises(DocumentError) as err:
        parse_document(text, ref())
    assert reason in str(err.value) and err.value.doc_path == "guide/page.md" and err.value.line == line
