"""Shared test setup: offline, no telemetry, and every piece of state in temporary folders."""

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from rag_assets.config import apply_offline_defaults

apply_offline_defaults()
# one unpacked tiktoken cache for the whole session (the workers inherit it), never the developer's
# data/cache; removed when the process that made it ends
if not os.environ.get("TIKTOKEN_CACHE_DIR"):
    os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="rag-tiktoken-")
    atexit.register(shutil.rmtree, os.environ["TIKTOKEN_CACHE_DIR"], True)

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


# Questions about SAMPLE_DOCS, each with the section that plainly answers it.
SAMPLE_EVAL_SET = [
    {"id": "tests", "question": "How do I add more test cases in the evaluation tool?",
     "expected": [{"doc_path": "guide/evaluation.md", "section": "Creating test cases"}]},
    {"id": "429", "question": "What HTTP status comes back when I exceed the requests per minute?",
     "expected": [{"doc_path": "rate-limits.md", "section": "Requests per minute"}]},
    {"id": "sse", "question": "How can I receive the response incrementally as events?",
     "expected": [{"doc_path": "guide/streaming.md", "section": "Server-sent events"}]},
]


def write_corpus(root: Path, docs: dict[str, str] = SAMPLE_DOCS) -> Path:
    for rel, text in docs.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# Choices a developer may have exported that must not leak into a test's own setup.
USER_CHOICES = ("RAG_EMBEDDER", "RAG_EMBEDDING_MODEL", "RAG_COLLECTION", "CHROMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                "RAG_LANGUAGES", "RAG_DEFAULT_LANGUAGE", "RAG_INCLUDE", "RAG_EXCLUDE", "RAG_IGNORE_FILES")


def state_env(root: Path) -> dict[str, str]:
    """Every RAG_* path under root (docs in root/docs)."""
    return {
        "RAG_DOCS_DIR": str(root / "docs"),
        "RAG_CHROMA_PATH": str(root / "chroma"),
        "RAG_STATE_DIR": str(root / "state"),
        "RAG_CACHE_DIR": str(root / "cache"),
        "RAG_EVAL_DIR": str(root / "eval"),
        "RAG_EVAL_RESULTS_DIR": str(root / "eval_results"),
        "RAG_CORPORA_DIR": str(root / "corpora"),
    }


def subprocess_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment for a `rag`/`dagster` child process whose state all lives under root."""
    env = {k: v for k, v in os.environ.items() if k not in USER_CHOICES}
    env.update(state_env(root), **extra)
    return env


def batching_sqlite_storage(root: Path) -> str:
    """The repo's dagster.yaml storage: stock SQLite layout, batching event log (a top-level block)."""
    return f"""run_storage:
  module: dagster._core.storage.runs
  class: SqliteRunStorage
  config:
    base_dir: {root}/storage/history
event_log_storage:
  module: rag_assets.orchestration.event_log
  class: BatchingSqliteEventLogStorage
  config:
    base_dir: {root}/storage/history/runs
schedule_storage:
  module: dagster._core.storage.schedules
  class: SqliteScheduleStorage
  config:
    base_dir: {root}/storage/schedules
"""


def instance_yaml(root: Path, storage: str, coordinator_extra: str = "") -> str:
    """A dagster.yaml like the repo's (telemetry off, run queue of 1) with all files under root
    and the given storage: the body of a `storage:` block (indented), or top-level
    run/event-log/schedule storage blocks (batching_sqlite_storage)."""
    storage = storage if storage.startswith("run_storage:") else f"storage:\n{storage}"
    return f"""telemetry:
  enabled: false
{storage}
local_artifact_storage:
  module: dagster._core.storage.root
  class: LocalArtifactStorage
  config:
    base_dir: {root}/dagster
compute_logs:
  module: dagster._core.storage.local_compute_log_manager
  class: LocalComputeLogManager
  config:
    base_dir: {root}/dagster/logs
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    max_concurrent_runs: 1
{coordinator_extra}"""


# The longest tests first, dealt out across the pytest-xdist workers: `--dist worksteal` hands each
# worker a contiguous block of the collection, so the long tests are interleaved for every worker to
# start on one, and the short ones at the end of each block are what an idle worker steals.
_LONGEST_FIRST = ("test_readme_commands.py", "test_scale_out.py", "test_web_ui.py", "test_concurrency.py",
                  "test_crash_recovery.py", "test_cli_ingest.py")


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        name = item.path.name
        return _LONGEST_FIRST.index(name) if name in _LONGEST_FIRST else len(_LONGEST_FIRST)

    ordered = sorted(items, key=rank)  # stable: the order within a file is kept
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    items[:] = [item for worker in range(workers) for item in ordered[worker::workers]]


@pytest.fixture
def rag_env(tmp_path, monkeypatch):
    """A docs folder with the sample corpus and every RAG_* path pointing into tmp_path."""
    write_corpus(tmp_path / "docs")
    for var, value in state_env(tmp_path).items():
        monkeypatch.setenv(var, value)
    for var in USER_CHOICES:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def dagster_home(tmp_path, monkeypatch):
    """A real, persistent (SQLite) Dagster instance in a temporary DAGSTER_HOME."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home, batching_sqlite_storage(home)))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _interrupts_not_left_ignored():
    """A test must not leave this process ignoring SIGINT or SIGTERM: every process a later test
    starts inherits that (dagster dev, a Chroma server, a compute-log tail), and its stop then waits
    out its timeout (30 s for dagster dev) or never comes. In a full xdist run SIGINT was ignored in
    a worker before test_assets' runs (/proc/self/status), and Dagster's in-process execution maps
    SIGTERM onto SIGINT's handler, so SIGTERM was ignored after them; dagster dev does the same
    mapping when it starts with SIGINT ignored."""
    yield
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
