"""Shared test setup: offline, no telemetry, and every piece of state in temporary folders."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

for _var, _value in {
    "DAGSTER_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "ORT_DISABLE_TELEMETRY": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "HF_HUB_OFFLINE": "1",
}.items():
    os.environ.setdefault(_var, _value)
# one unpacked tiktoken cache for the whole session, never the developer's data/cache
os.environ.setdefault("TIKTOKEN_CACHE_DIR", tempfile.mkdtemp(prefix="rag-tiktoken-"))

SAMPLE_DOCS = {
    "guide/evaluation.md": """---
title: Evaluation tool
source: Product docs
doc_type: guide
last_update_date: 2024-05-01
tags: [eval, testing]
---

# Evaluation tool

## Creating test cases

To add more test cases, click the 'Add Test Case' button, fill in values for each variable in your
prompt, and repeat to create multiple scenarios. Each row of the evaluation screen is one test case.

## Grading results

Grade each output on a five point scale and compare prompt versions side by side.
""",
    "guide/streaming.md": """---
title: Streaming messages
doc_type: guide
---

# Streaming messages

## Server-sent events

Set `stream: true` to receive the response incrementally as server-sent events. Each event has a
type such as message_start, content_block_delta and message_stop.

```python
with client.messages.stream(model="m", max_tokens=10, messages=[]) as stream:
    for text in stream.text_stream:
        print(text)
```
""",
    "rate-limits.md": """# Rate limits

## Requests per minute

Your organisation may send at most 50 requests per minute on the free tier. Exceeding the limit
returns HTTP 429 with a retry-after header telling you how many seconds to wait.

| Tier | Requests per minute |
|------|---------------------|
| Free | 50 |
| Build | 1000 |
""",
}


def write_corpus(root: Path, docs: dict[str, str] = SAMPLE_DOCS) -> Path:
    for rel, text in docs.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def rag_env(tmp_path, monkeypatch):
    """A docs folder with the sample corpus and every RAG_* path pointing into tmp_path."""
    docs = write_corpus(tmp_path / "docs")
    monkeypatch.setenv("RAG_DOCS_DIR", str(docs))
    monkeypatch.setenv("RAG_CHROMA_PATH", str(tmp_path / "chroma"))
    monkeypatch.setenv("RAG_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAG_EVAL_DIR", str(tmp_path / "eval"))
    monkeypatch.setenv("RAG_EVAL_RESULTS_DIR", str(tmp_path / "eval_results"))
    for var in ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_COLLECTION", "CHROMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def dagster_home(tmp_path, monkeypatch):
    """A real, persistent (SQLite) Dagster instance in a temporary DAGSTER_HOME."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home
