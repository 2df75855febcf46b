"""`rag query` through a running `rag serve`: find the server of the corpus (RAG_SERVER_URL, else the
server file `rag serve` writes in the corpus's state folder) and ask it with urllib, importing
nothing heavy (no numpy, chromadb, dagster or onnxruntime on this path). None whenever no server
answers for this corpus: the caller then runs the query itself, with the same output."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rag_assets.serving import server_file

TIMEOUT_SECONDS = 30.0
# the keys of SearchResult.as_dict, in its order: what `rag query --json` prints for a result
RESULT_KEYS = ("chunk_id", "doc_path", "section", "heading_breadcrumb", "text", "score", "relevance")


class ServerRefused(Exception):
    """The server answered 400: the request itself is wrong (the message is the server's one line)."""


def find_server(names: list[str]) -> tuple[str, str | None] | None:
    """(base URL, token) of a server for these corpora (none named: the default corpus), or None."""
    from rag_assets.config import Settings

    if os.environ.get("RAG_NO_SERVER", "").lower() in ("1", "true", "yes"):
        return None
    token = os.environ.get("RAG_SERVE_TOKEN") or None
    explicit = os.environ.get("RAG_SERVER_URL")
    if explicit:
        return explicit.rstrip("/"), token
    try:
        base = Settings.from_env()
    except Exception:  # noqa: BLE001 - a bad setting: the local path reports it
        return None
    urls = set()
    for name in names or ["default"]:
        state_dir = base.state_dir if name == "default" else Path(base.corpora_dir) / name / "state"
        info = server_file.read_live(state_dir)
        if info is None or (info.get("token") and not token):
            return None
        if name == "default" and (info.get("docs_dir") != str(base.docs_dir.resolve())
                                  or info.get("collection") != base.collection):
            return None  # a server of this state folder for another docs folder or collection
        urls.add(info["url"])
    return (urls.pop(), token) if len(urls) == 1 else None


def search(url: str, token: str | None, body: dict[str, Any]) -> dict[str, Any] | None:
    """The server's /search answer; None when it cannot answer (unreachable, 401, 404, 5xx);
    ServerRefused for a 400 (the same request would fail locally too)."""
    request = urllib.request.Request(f"{url}/search", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 400:
            try:
                message = json.loads(exc.read()).get("error", "")
            except ValueError:
                message = ""
            raise ServerRefused(message or "the server refused the query") from None
        return None
    except (OSError, ValueError):  # URLError, refused, reset, timeout, a body that is not JSON
        return None


def result_as_dict(r: dict[str, Any], *extra: str) -> dict[str, Any]:
    """A server result as `rag query --json` prints a local one (SearchResult.as_dict, then extra keys)."""
    data = {k: r[k] for k in RESULT_KEYS if k in r and r[k] is not None}
    if "context_tokens" in r:
        data["context"] = r["context"]
        data["context_tokens"] = r["context_tokens"]
    for key in extra:
        data[key] = r[key]
    return data
