"""The sample corpus most tests index (three small pages), the questions it answers, and writing a
corpus to a folder."""

from pathlib import Path

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
