"""Metadata a consumer can rely on: every document (and so every chunk) carries `source`, `doc_type`
and `last_update_date`, plus the ingestion contract's `sidebar_label`, `sidebar_position` and
`learning_objectives`.

- `source`: the frontmatter's, else the document's title.
- `doc_type`: the frontmatter's, else RAG_DEFAULT_DOC_TYPE, else the document's first folder
  (`faq/billing.md` -> `faq`), else `document`. Inside the folder of documents from code
  (RAG_CODE_DOCUMENTS_FOLDER, `_from_code/`) the folder under it counts (`_from_code/faq/x.md` ->
  `faq`, `_from_code/x.md` -> `document`): that folder is where they are kept, not what they are.
- `last_update_date` (an ISO date): the frontmatter's, else the date of the file's last git commit
  when the docs folder is in a git work tree (one `git log` for the whole folder, not one per file),
  else the file's modification date (UTC).
- `sidebar_label`: the title; `sidebar_position`: 0; `learning_objectives`: none.
- `language`: the page's language as its corpus's scope resolved it (rag_assets.ingest.languages:
  the generator's layout, the frontmatter's `lang`/`locale`, the text), `und` when unknown.
- `site_path` (every page), and on a site's pages `route`, `url` and, on a versioned site, `version`
  (rag_assets.ingest.site_urls): computed from the page's place, never taken from a frontmatter key of
  the same name. `doc_type`'s folder is the first folder of `site_path`.

Requirements (RAG_REQUIRED_METADATA=source,doc_type,last_update_date): a document whose frontmatter
does not give a required key fails by name (InvalidDocumentError: "missing required metadata
'source'") instead of being filled in; RAG_DOC_TYPES=core-rules,faq,... limits doc_type to those
values. The other documents are indexed.

Values that cannot be used (each with a warning naming the file and the value, logged and counted
in the parse stage's `metadata_warnings`):

- a `last_update_date` that is a date followed by something else (`2024-01-05garbage`) or lies in
  the future: the file's own date (git or modification time) is stored instead; one that is not a
  date at all fails the document, as before;
- a frontmatter key the vector store refuses (empty, starting with `$` or `#`, or `chroma:document`):
  dropped before anything is embedded, so the document is indexed without it. Such a key could not
  be filtered on either (filters refuse `$` keys).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import re
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rag_assets.errors import InvalidDocumentError
from rag_assets.ingest import site_urls
from rag_assets.models import DocumentRef, ParsedDocument

GUARANTEED = ("source", "doc_type", "last_update_date")
DEFAULT_DOC_TYPE = "document"
DEFAULT_CODE_FOLDER = "_from_code"
log = logging.getLogger(__name__)
# A date, optionally with a time and a zone (YAML leaves "2024-01-05 10:00:00 +0100" a string).
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?[ \t]*(?:Z|[A-Z]{2,5}|[+-]\d{2}(?::?\d{2})?)?")
_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class MetadataPolicy:
    default_doc_type: str = ""
    required: tuple[str, ...] = ()
    doc_types: tuple[str, ...] = ()
    code_folder: str = DEFAULT_CODE_FOLDER  # RAG_CODE_DOCUMENTS_FOLDER: where documents from code are kept

    @classmethod
    def from_settings(cls, ingest) -> "MetadataPolicy":
        """From the settings' ingest group (rag_assets.config.IngestSettings)."""
        split = lambda raw: tuple(v.strip() for v in (raw or "").split(",") if v.strip())  # noqa: E731
        return cls(ingest.default_doc_type.strip(), split(ingest.required_metadata), split(ingest.doc_types),
                   ingest.code_documents_folder.strip().strip("/"))

    @property
    def fingerprint(self) -> str:
        """The parse stage's fingerprint: a changed policy re-parses (and re-validates), and so does a new
        MDX renderer (rag_assets.ingest.mdx), whose output is the parsed body. v3: pages carry their place
        and address (site_path, route, url, version) and doc_type comes from site_path."""
        from rag_assets.ingest.mdx import RENDER_VERSION

        # the code folder only when it is not the default: indexes made before it counted are not re-parsed
        # (a document from code written before carries no document_id: re-ingesting it re-parses it anyway)
        folder = f":{self.code_folder}" if self.code_folder != DEFAULT_CODE_FOLDER else ""
        return f"meta-v3:{RENDER_VERSION}:{self.default_doc_type}:{','.join(self.required)}:{','.join(self.doc_types)}{folder}"

    def folder_doc_type(self, doc_path: str) -> str:
        """The doc_type a document's place gives it: its first folder (under the folder of documents
        from code, the one below that), else `document`."""
        parts = doc_path.split("/")
        if self.code_folder and len(parts) > 1 and parts[0] == self.code_folder:
            parts = parts[1:]
        return parts[0] if len(parts) > 1 else DEFAULT_DOC_TYPE


def _iso_date(value) -> str | None:
    """An ISO date (YYYY-MM-DD) from a frontmatter value, or None when it is not a date: the whole
    value must be a date, or a date and time (`2024-01-05garbage` is not)."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            m = _DATE_TIME.fullmatch(text)
            try:
                return dt.date.fromisoformat(m.group(1)).isoformat() if m else None
            except ValueError:
                return None
    return None


def _starts_with_a_date(value) -> bool:
    """`2024-01-05garbage`: a real date, then something that is not part of one."""
    if not isinstance(value, str):
        return False
    m = _DATE_START.match(value.strip())
    try:
        return m is not None and dt.date.fromisoformat(m.group(0)) is not None
    except ValueError:
        return False


# Keys the vector store refuses in metadata (Chroma 1.5: "Invalid metadata at index 0", naming no key).
def _storable_key(key: str) -> bool:
    return bool(key) and not key.startswith(("$", "#")) and key != "chroma:document"


def _warn(warnings: list[str] | None, message: str) -> None:
    log.warning("%s", message)
    if warnings is not None:
        warnings.append(message)


@functools.lru_cache(maxsize=8)
def git_dates(docs_dir: str, head: str) -> dict[str, str]:
    """doc_path -> date of its last commit, for every file git knows under docs_dir ({} outside git).
    `head` (the current commit) keys the cache: a new commit is a new look."""
    if not head:
        return {}
    try:
        out = subprocess.run(
            ["git", "-C", docs_dir, "log", "--format=%x00%cs", "--name-only", "--relative", "--", "."],
            capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    dates: dict[str, str] = {}
    current = ""
    for line in out.splitlines():
        if line.startswith("\x00"):
            current = line[1:].strip()
        elif line.strip() and current:
            dates.setdefault(line.strip(), current)  # newest commit first: keep the first seen
    return dates


# A document without a date in its frontmatter asks for its folder's git head: one `git rev-parse`
# a document was ~3 ms each, 5 minutes of a 100,000-page ingest. The head is asked again after this
# long, so a commit made during an ingest is seen within seconds.
_HEAD_TTL_SECONDS = 2.0
_heads: dict[str, tuple[float, str]] = {}


def _git_head(docs_dir: str) -> str:
    now = time.monotonic()
    seen = _heads.get(docs_dir)
    if seen is not None and now - seen[0] < _HEAD_TTL_SECONDS:
        return seen[1]
    head = _read_git_head(docs_dir)
    _heads[docs_dir] = (now, head)
    return head


def _read_git_head(docs_dir: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", docs_dir, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def docs_dir_of(ref: DocumentRef) -> str:
    path = Path(ref.absolute_path)
    return str(path.parents[len(Path(ref.doc_path).parts) - 1])


def file_date(ref: DocumentRef) -> str:
    """The last commit date of the file when its folder is in git, else its modification date (UTC)."""
    root = docs_dir_of(ref)
    dated = git_dates(root, _git_head(root)).get(ref.doc_path)
    if dated:
        return dated
    mtime = ref.mtime or os.stat(ref.absolute_path).st_mtime
    return dt.datetime.fromtimestamp(mtime, dt.timezone.utc).date().isoformat()


def complete(doc: ParsedDocument, ref: DocumentRef | None, policy: MetadataPolicy,
             warnings: list[str] | None = None, *, undated: str | None = None) -> ParsedDocument:
    """The document with the guaranteed fields filled in, or InvalidDocumentError naming what a
    requirement finds missing or not allowed. Values that cannot be used are replaced or dropped with
    a warning (the module docstring), logged and added to `warnings`. `undated`: the date a document
    without a usable one gets (None: its file's, from `ref`), for a check before its file is written."""

    def own_date() -> str:
        return undated if undated is not None else file_date(ref)

    meta = dict(doc.metadata)
    for key in [k for k in meta if not _storable_key(str(k))]:
        del meta[key]
        _warn(warnings, f"{doc.doc_path}: frontmatter key {key!r} dropped: the vector store refuses keys that are "
                        "empty or start with '$' or '#'")
    given = {key for key in GUARANTEED if meta.get(key) not in (None, "")}
    missing = [key for key in policy.required if key not in given and key not in _present(doc, key)]
    if missing:
        raise InvalidDocumentError(doc.doc_path, f"missing required metadata {', '.join(map(repr, missing))} "
                                                 "(RAG_REQUIRED_METADATA): add it to the frontmatter")
    if "last_update_date" in given:
        value = meta["last_update_date"]
        date = _iso_date(value)
        if date is None and not _starts_with_a_date(value):
            raise InvalidDocumentError(doc.doc_path, f"last_update_date {value!r} is not a date (use YYYY-MM-DD)")
        tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).date().isoformat()
        if date is None or date > tomorrow:
            date = own_date()
            problem = "is not a date (use YYYY-MM-DD)" if _iso_date(value) is None else "lies in the future"
            _warn(warnings, f"{doc.doc_path}: last_update_date {value!r} {problem}: the file's date {date} is used")
        meta["last_update_date"] = date
    else:
        meta["last_update_date"] = own_date()
    if "source" not in given:
        meta["source"] = doc.title
    # where the page sits in its site and its address (rag_assets.ingest.site_urls): computed, so a
    # frontmatter value of the same name does not win (Hugo's `url` frontmatter is the route: applied there)
    for key, value in site_urls.address(ref.place if ref is not None else "", doc.doc_path, doc.metadata,
                                         doc.title).items():
        meta[key] = value
    if "doc_type" not in given:
        meta["doc_type"] = policy.default_doc_type or policy.folder_doc_type(meta["site_path"])
    if policy.doc_types and str(meta["doc_type"]) not in policy.doc_types:
        raise InvalidDocumentError(doc.doc_path, f"doc_type {meta['doc_type']!r} is not one of "
                                                 f"{', '.join(policy.doc_types)} (RAG_DOC_TYPES)")
    if ref is not None and ref.language:
        meta["language"] = ref.language
    else:
        meta.setdefault("language", "und")
    meta.setdefault("sidebar_label", doc.title)
    meta.setdefault("sidebar_position", 0)
    meta.setdefault("learning_objectives", [])
    return replace(doc, metadata=meta)


def _present(doc: ParsedDocument, key: str) -> set[str]:
    """Required keys other than the guaranteed three are present when the frontmatter has them."""
    if key in GUARANTEED:
        return set()
    return {key} if doc.metadata.get(key) not in (None, "", []) or (key == "title" and doc.title) else set()
