"""Every command line the README and its docs pages show runs as written, in their order (the README
first, then docs/*.md in the order the README's map lists them), on a scratch copy of the bundled
corpus (data/docs, data/eval) with every piece of state in a temporary folder.

Taken from those pages: the `.venv/bin/rag …`, `.venv/bin/dagster asset materialize …` and
`.venv/bin/dagster job execute …` lines of its ```bash blocks (the first block's chain of commands
included) and of inline code spans. Left to other tests: `dagster dev`, `rag ui` and `rag watch` (test_web_ui.py,
cli/test_ui.py and cli/test_watch.py start them) and the test command itself. `rag ask` is pointed at an OpenAI-compatible stub server
started here (the README says to set OPENAI_BASE_URL / OPENAI_API_KEY for it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rag_assets_tests.support.environment import subprocess_env
from rag_assets_tests.support.openai_server import OpenAIStubServer

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def documentation() -> str:
    """The README, then every docs page it links to, in the order of its links."""
    readme = README.read_text(encoding="utf-8")
    pages = list(dict.fromkeys(re.findall(r"\]\((docs/[a-z0-9_-]+\.md)\)", readme)))
    return "\n".join([readme] + [(REPO / page).read_text(encoding="utf-8") for page in pages])
RUNNABLE = (".venv/bin/rag ", ".venv/bin/dagster asset materialize ", ".venv/bin/dagster job execute ")
SERVERS = (".venv/bin/rag ui", ".venv/bin/rag watch")  # run until stopped: cli/test_ui.py, cli/test_watch.py
KEY = "sk-readme-test-0000"


def readme_commands(text: str) -> list[str]:
    """The runnable command lines, in order of appearance."""
    found: list[tuple[int, str]] = []
    for block in re.finditer(r"```bash\n(.*?)```", text, re.S):
        for line in block.group(1).splitlines():
            for part in line.split("&&"):
                command = _strip_comment(part.strip())
                if command.startswith(RUNNABLE) and not command.startswith(SERVERS):
                    found.append((block.start(), command))
    for span in re.finditer(r"`(\.venv/bin/[^`]+)`", text):
        command = span.group(1).strip()
        if command.startswith(RUNNABLE) and not command.startswith(SERVERS):
            found.append((span.start(), command))
    return [command for _, command in sorted(found, key=lambda item: item[0])]


def _strip_comment(command: str) -> str:
    """`cmd --flag  # explained` -> `cmd --flag` (a # inside quotes stays)."""
    quote = None
    for i, char in enumerate(command):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command


def test_the_readme_lists_the_commands_it_promises():
    commands = readme_commands(documentation())
    assert commands[:3] == [".venv/bin/rag ingest", ".venv/bin/rag evaluate",
                            '.venv/bin/rag query "How do I add more test cases in the Evaluation tool?"'], commands[:3]
    assert any(c.startswith(".venv/bin/dagster asset materialize") and "--partition" in c for c in commands)
    assert any(c.startswith(".venv/bin/dagster job execute -m rag_assets -j ingest_documents") for c in commands)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    shutil.copytree(REPO / "data" / "docs", tmp_path / "docs")
    shutil.copytree(REPO / "data" / "eval", tmp_path / "eval")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text().replace("data/dagster", str(tmp_path / "dagster")))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return tmp_path, home


@pytest.mark.system
def test_every_readme_command_runs_as_written(scratch):
    tmp_path, home = scratch
    commands = readme_commands(documentation())
    with OpenAIStubServer(api_key=KEY, default_chat_reply="Click Add Test Case [Source 1].") as chat:
        env = subprocess_env(tmp_path, DAGSTER_HOME=str(home), OPENAI_API_KEY=KEY, OPENAI_BASE_URL=chat.base_url)
        env.pop("RAG_EMBEDDER", None)
        for command in commands:
            proc = subprocess.run(command, shell=True, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"{command}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
            assert "Traceback" not in proc.stderr, f"{command}\n{proc.stderr[-3000:]}"
