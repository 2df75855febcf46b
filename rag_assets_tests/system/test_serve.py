"""`rag serve` and `rag mcp` as real processes: an MCP client from the SDK over streamable HTTP and over
stdio lists the tools and gets cited results; `rag query` goes through the running server with the
local output; the curl examples of docs/serve.md run; SIGTERM stops it gracefully; a non-loopback
bind without RAG_SERVE_TOKEN refuses to start."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from rag_assets.serving import server_file
from rag_assets_tests.support.environment import subprocess_env
from rag_assets_tests.support.serving import SECOND, data_folder_corpora, sample_corpora

pytestmark = pytest.mark.system

RAG = str(Path(sys.executable).with_name("rag"))
REPO = Path(__file__).resolve().parents[2]
TOKEN = "test-token-0123"
QUESTION = "How can I receive the response incrementally as events?"


@pytest.fixture(scope="module")
def env(tmp_path_factory, chat):
    root = tmp_path_factory.mktemp("serve")
    sample, corpora = sample_corpora(root)
    env = subprocess_env(root, **sample, OPENAI_API_KEY="sk-test-000", OPENAI_BASE_URL=chat.base_url,
                         NO_PROXY="127.0.0.1,localhost")
    for var in ("RAG_SERVE_TOKEN", "RAG_SERVER_URL", "RAG_NO_SERVER", "RAG_RETRIEVAL_MODE"):
        env.pop(var, None)
    return env, corpora


def _wait_listening(proc: subprocess.Popen, timeout: float = 180.0) -> str:
    deadline = time.monotonic() + timeout
    seen = ""
    watch = selectors.DefaultSelector()  # epoll: select() refuses a descriptor over 1023 in a busy test worker
    watch.register(proc.stderr, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if watch.select(1.0):
            line = proc.stderr.readline()
            seen += line
            found = re.search(r"listening on (http://\S+)", line)
            if found:
                return found.group(1)
        if proc.poll() is not None:
            break
    raise AssertionError(f"rag serve did not start (exit {proc.poll()}):\n{seen[-3000:]}")


def test_http_server_mcp_query_docs_and_sigterm(env):
    env, corpora = env
    served = {**env, "RAG_SERVE_TOKEN": TOKEN}
    proc = subprocess.Popen([RAG, "serve", "--port", "0"], env=served, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = _wait_listening(proc)
        info = server_file.read_live(corpora[0][1].state_dir)
        assert info["url"] == url and info["token"] is True and TOKEN not in json.dumps(info)

        # MCP over streamable HTTP, with the bearer token
        async def mcp_session():
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                tools = await client.list_tools()
                found = await client.call_tool("search", {"query": QUESTION, "corpus": "default"})
                answer = await client.call_tool("answer", {"question": QUESTION})
            await http.aclose()
            return tools, found, answer

        tools, found, answer = anyio.run(mcp_session)
        assert {t.name for t in tools.tools} == {"search", "read_page", "list_pages", "answer"}
        assert found.structured_content["results"][0]["uri"] == "rag://default/guide/streaming.md#server-sent-events"
        assert "[Source 1]" in answer.structured_content["answer"]
        assert answer.structured_content["sources"][0]["path"] == "guide/streaming.md"

        # `rag query` asks the server (with the token) and prints what the local path prints
        printed = {}
        for args in (["query", QUESTION], ["query", "--json", QUESTION], ["query", "--corpus", "default", "--corpus", SECOND,
                                                                          "--json", "free tier requests"]):
            remote = subprocess.run([RAG, *args], env=served, capture_output=True, text=True, timeout=120)
            local = subprocess.run([RAG, *args], env={**served, "RAG_NO_SERVER": "1"}, capture_output=True, text=True,
                                   timeout=300)
            assert remote.returncode == local.returncode == 0, remote.stderr + local.stderr
            assert remote.stdout == local.stdout
            printed[tuple(args)] = local.stdout
        # that path imports nothing heavy
        timed = subprocess.run([sys.executable, "-X", "importtime", "-m", "rag_assets", "query", QUESTION], env=served,
                               capture_output=True, text=True, timeout=120)
        assert timed.returncode == 0 and timed.stdout == printed[("query", QUESTION)]
        imported = {line.split("|")[-1].strip().split(".")[0] for line in timed.stderr.splitlines() if "|" in line}
        assert not imported & {"numpy", "chromadb", "dagster", "onnxruntime", "sqlalchemy", "openai"}, imported
        # without the token the CLI does not ask this server: it answers locally, the same
        without_token = subprocess.run([RAG, "query", QUESTION], env=env, capture_output=True, text=True, timeout=300)
        assert without_token.returncode == 0 and without_token.stdout == printed[("query", QUESTION)]

        # the examples of docs/serve.md, against this server
        examples = docs_examples()
        assert examples, "docs/serve.md shows no curl example"
        for command in examples:
            command = command.replace("http://127.0.0.1:8765", url)
            run = subprocess.run(command, shell=True, env=served, capture_output=True, text=True, timeout=120)
            assert run.returncode == 0 and run.stdout.strip(), f"{command}\n{run.stdout}\n{run.stderr}"
            json.loads(run.stdout)  # every example prints one JSON object
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == -signal.SIGTERM or proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "stopped" in err and "POST /search 200" in err and QUESTION not in err, err[-3000:]
    assert server_file.read(corpora[0][1].state_dir) is None and server_file.read(corpora[1][1].state_dir) is None


def docs_examples() -> list[str]:
    text = (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    commands = []
    for block in re.finditer(r"```bash\n(.*?)```", text, re.S):
        joined = block.group(1).replace("\\\n", " ")
        commands += [line.strip() for line in joined.splitlines() if line.strip().startswith("curl ")]
    return commands


def test_stdio_mcp_lists_tools_and_answers_with_citations(env):
    env, _ = env

    async def session():
        params = StdioServerParameters(command=RAG, args=["mcp"], env=env)
        async with Client(params) as client:
            tools = await client.list_tools()
            found = await client.call_tool("search", {"query": QUESTION, "top_k": 2})
            page = await client.call_tool("read_page", {"path": "guide/streaming.md", "section": "server-sent-events"})
            answer = await client.call_tool("answer", {"question": QUESTION, "max_sources": 2})
            resources = await client.list_resources()
            return tools, found, page, answer, resources

    tools, found, page, answer, resources = anyio.run(session)
    assert {t.name for t in tools.tools} == {"search", "read_page", "list_pages", "answer"}
    assert found.structured_content["results"][0]["path"] == "guide/streaming.md"
    assert "Server-sent events" in page.content[0].text
    assert "[Source 1]" in answer.structured_content["answer"] and answer.structured_content["cited_sources"] == [1]
    assert "rag://default/guide/streaming.md" in {str(r.uri) for r in resources.resources}


def test_a_non_loopback_bind_without_a_token_refuses_to_start(env):
    env, _ = env
    proc = subprocess.run([RAG, "serve", "--host", "0.0.0.0", "--port", "0"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "RAG_SERVE_TOKEN" in proc.stderr and "Traceback" not in proc.stderr


def documented(language: str, marker: str) -> str:
    """The first code block of docs/serve.md in this language that holds marker."""
    text = (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    return next(b for b in re.findall(rf"```{language}\n(.*?)```", text, re.S) if marker in b)


def test_the_documented_client_entries_used_as_written_from_another_folder_see_every_corpus(tmp_path):
    """docs/serve.md's Claude Desktop entry, used literally from another folder, served only `default`:
    the corpora made with --name live under RAG_CORPORA_DIR, which the entry did not set. Now the entry
    names the data folder, and so does the documented `rag serve` command line."""
    data = tmp_path / "checkout" / "data"
    data_folder_corpora(data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def literal(text: str) -> str:
        return text.replace("/path/to/rag_assets/.venv/bin/rag", RAG).replace("/path/to/rag_assets/data", str(data))

    entry = json.loads(literal(documented("json", "mcpServers")))["mcpServers"]["rag-docs"]

    async def over_stdio():
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"),
                                       cwd=str(elsewhere))
        async with Client(params) as client:
            return (await client.call_tool("list_pages", {})).structured_content

    listed = anyio.run(over_stdio)
    assert [c["name"] for c in listed["corpora"]] == ["default", SECOND]
    assert {p["corpus"] for p in listed["pages"]} == {"default", SECOND}

    command = literal(documented("bash", "rag serve").strip()) + " --port 0"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "CHROMA_", "OPENAI_"))}
    proc = subprocess.Popen(command, shell=True, cwd=elsewhere, env={**clean, "NO_PROXY": "127.0.0.1,localhost"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = _wait_listening(proc)
        vscode = json.loads(documented("json", '"servers"'))["servers"]["rag-docs"]
        endpoint = vscode["url"].replace("http://127.0.0.1:8765", url)

        async def over_http():
            async with Client(streamable_http_client(endpoint)) as client:
                return (await client.call_tool("list_pages", {})).structured_content

        served = anyio.run(over_http)
        assert [c["name"] for c in served["corpora"]] == ["default", SECOND]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=60)
