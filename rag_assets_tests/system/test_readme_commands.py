"""Every command line the README and its docs pages show runs as written (the README first, then
docs/*.md in the order the README's map lists them), in a scratch checkout of the repository (its
tracked files as this working tree has them, a git repository of its own, the project's venv linked
in) with the settings' defaults: every piece of state lands where a user's would, under the
checkout, and afterwards `git status` is clean: what `rag` writes is git-ignored (the index, the
state, the Dagster instance, corpora of other folders, documents from code).

The first command (`rag ingest`, the demo) runs when the module's checkout is made (one per
pytest-xdist worker); every later command is a test of its own, run in that checkout in the README's
order, so that the two workers share them out. Commands that use what an earlier one made are one
test, in their order (`rag ingest --docs-dir …`, then the `--corpus` query and `rag corpora` that
show its corpus).

Taken from those pages: the `.venv/bin/rag …`, `.venv/bin/dagster asset materialize …` and
`.venv/bin/dagster job execute …` lines of its ```bash blocks (the first block's chain of commands
included) and of inline code spans. Left to other tests: `dagster dev`, `rag ui` and `rag watch` (test_web_ui.py,
cli/test_ui.py and cli/test_watch.py start them) and the test command itself. `rag ask` is pointed at an OpenAI-compatible stub server
started here (the README says to set OPENAI_BASE_URL / OPENAI_API_KEY for it). Right after the first one
(`rag ingest` of the bundled corpus) a `rag query` is checked to build nothing: it reads the search
snapshot the ingest committed (issue 34, "the first query is ready").
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rag_assets_tests.support.environment import state_env, subprocess_env
from rag_assets_tests.support.openai_server import OpenAIStubServer

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def documentation() -> str:
    """The README, then every docs page it links to, in the order of its links."""
    readme = README.read_text(encoding="utf-8")
    pages = list(dict.fromkeys(re.findall(r"\]\((docs/[a-z0-9_-]+\.md)\)", readme)))
    return "\n".join([readme] + [(REPO / page).read_text(encoding="utf-8") for page in pages])
RUNNABLE = (".venv/bin/rag ", ".venv/bin/dagster asset materialize ", ".venv/bin/dagster job execute ")
SERVERS = (".venv/bin/rag ui", ".venv/bin/rag watch",  # run until stopped: cli/test_ui.py, cli/test_watch.py,
           ".venv/bin/rag serve", ".venv/bin/rag mcp")  # system/test_serve.py
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


def command_groups(commands: list[str]) -> list[list[str]]:
    """The commands after the first, one group each in their order, but for those that use the corpus an
    earlier `--docs-dir` ingest made (a `--corpus` query, the bare `rag corpora` listing it): they join
    its group."""
    groups: list[list[str]] = []
    for command in commands[1:]:
        made_a_corpus = bool(groups) and any("--docs-dir" in c for c in groups[-1])
        if made_a_corpus and ("--corpus " in command or command == ".venv/bin/rag corpora"):
            groups[-1].append(command)
        else:
            groups.append([command])
    return groups


COMMANDS = readme_commands(documentation())
GROUPS = command_groups(COMMANDS)


def test_the_readme_lists_the_commands_it_promises():
    commands = readme_commands(documentation())
    assert commands[:3] == [".venv/bin/rag ingest", ".venv/bin/rag evaluate",
                            '.venv/bin/rag query "How do I add more test cases in the Evaluation tool?"'], commands[:3]
    assert any(c.startswith(".venv/bin/dagster asset materialize") and "--partition" in c for c in commands)
    assert any(c.startswith(".venv/bin/dagster job execute -m rag_assets -j ingest_documents") for c in commands)
    assert any("--docs-dir" in c for c in commands)  # a second folder, a corpus of its own (data/corpora)
    # every command after the demo's ingest runs in exactly one test, in the README's order
    assert [c for group in command_groups(commands) for c in group] == commands[1:]


def scratch_checkout(checkout: Path) -> Path:
    """The repository's tracked files in checkout, committed to a git repository of its own, the venv linked."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (REPO / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    git = ["git", "-c", "user.name=readme", "-c", "user.email=readme@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=checkout, check=True)
    subprocess.run([*git, "add", "-A"], cwd=checkout, check=True)
    subprocess.run([*git, "commit", "-qm", "checkout"], cwd=checkout, check=True)
    (checkout / ".venv").symlink_to(REPO / ".venv")  # a link, which `.venv/` (a folder) does not match
    (checkout / ".git" / "info" / "exclude").write_text(".venv\n")
    return checkout


def readme_env(checkout: Path, chat: OpenAIStubServer) -> dict[str, str]:
    """The settings' defaults (no RAG_* paths, the instance of the checkout's dagster.yaml), `rag ask`'s
    endpoint the stub server (the README says to set OPENAI_BASE_URL / OPENAI_API_KEY for it)."""
    env = {k: v for k, v in subprocess_env(checkout).items() if k not in state_env(checkout)}
    env.update(DAGSTER_HOME=str(checkout), OPENAI_API_KEY=KEY, OPENAI_BASE_URL=chat.base_url, NO_PROXY="127.0.0.1,localhost")
    env.pop("RAG_EMBEDDER", None)
    return env


def run_as_written(command: str, checkout: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(command, shell=True, cwd=checkout, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{command}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, f"{command}\n{proc.stderr[-3000:]}"


def git_status(checkout) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=checkout, capture_output=True,
                          text=True, check=True).stdout


def chat_server() -> OpenAIStubServer:
    return OpenAIStubServer(api_key=KEY, default_chat_reply="Click Add Test Case [Source 1].")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The scratch checkout after the README's first command, the demo's `rag ingest` of the bundled
    corpus, run as written, and its first query checked to build nothing; the later commands run in it,
    in the README's order. One per pytest-xdist worker, so that both run the README's commands (a copy
    would not do: the state records the checkout's absolute paths)."""
    checkout = scratch_checkout(tmp_path_factory.mktemp("readme") / "checkout")
    with chat_server() as chat:
        env = readme_env(checkout, chat)
        run_as_written(COMMANDS[0], checkout, env)  # the README's first command ingests the bundled corpus
        assert_the_first_query_builds_nothing(env, checkout)
    assert git_status(checkout) == "", "rag wrote files git does not ignore:\n" + git_status(checkout)
    return checkout


@pytest.mark.system
@pytest.mark.parametrize("commands", GROUPS, ids=[" && ".join(c.removeprefix(".venv/bin/") for c in g)[:80] for g in GROUPS])
def test_every_readme_command_runs_as_written(checkout, commands):
    with chat_server() as chat:
        env = readme_env(checkout, chat)
        for command in commands:
            run_as_written(command, checkout, env)
    if any("--docs-dir" in c for c in commands):
        assert (checkout / "data" / "corpora").is_dir()
    assert git_status(checkout) == "", "rag wrote files git does not ignore:\n" + git_status(checkout)


FROM_CODE = ("from rag_assets import RAGPipeline\n"
             "r = RAGPipeline.from_settings().ingest([{'id': 'notes/oil', 'content': '# Oil\\n\\nGearbox G2 takes "
             "two litres of oil.\\n'}])\nassert r.documents_processed == 1, r\n")


@pytest.mark.system
def test_documents_from_code_land_in_the_checkouts_ignored_data(checkout):
    with chat_server() as chat:
        subprocess.run([".venv/bin/python", "-c", FROM_CODE], cwd=checkout, env=readme_env(checkout, chat), check=True,
                       timeout=600)
    assert (checkout / "data" / "docs" / "_from_code").is_dir()
    assert git_status(checkout) == "", "rag wrote files git does not ignore:\n" + git_status(checkout)


def assert_the_first_query_builds_nothing(env: dict, checkout: Path) -> None:
    """The first `rag query` after an ingest of the bundled corpus reads the search snapshot the ingest
    committed: it builds nothing (the snapshot's folder and the index generation stay as the ingest
    left them), imports neither chromadb nor dagster, and answers well within its retrieval timeout."""
    from rag_assets.index.generation import KEY as GENERATION
    from rag_assets.index.state_file import read_meta

    state_dir = checkout / "data" / "state"  # the settings' default
    folder = state_dir / "keyword" / "rag_chunks"
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir()}
    generation = read_meta(state_dir, GENERATION)
    assert (folder / "CURRENT").is_file() and generation not in (None, "empty"), before
    proc = subprocess.run([".venv/bin/python", "-X", "importtime", "-m", "rag_assets", "query",
                           "How do I add more test cases in the Evaluation tool?", "--json"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["results"], proc.stdout[:2000]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert not {m for m in imported if m.split(".")[0] in ("chromadb", "dagster")}, "the query imported the store or Dagster"
    assert [line for line in proc.stderr.splitlines() if not line.startswith("import time:")] == []  # no warning either
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir()} == before
    assert read_meta(state_dir, GENERATION) == generation
