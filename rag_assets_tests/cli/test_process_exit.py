"""The `rag` process's exit: flushed output, atexit handlers run, the code kept, running threads waited for."""

import subprocess
import sys
import textwrap
import pytest

pytestmark = pytest.mark.system


def _run(body: str, **kwargs) -> subprocess.CompletedProcess:
    code = "from rag_assets.cli.process_exit import exit_process\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, **kwargs)


def test_output_is_flushed_and_exit_handlers_run_with_the_code_kept():
    proc = _run("""
        import atexit, sys
        atexit.register(lambda: print("handler ran", file=sys.stderr))
        sys.stdout.write("x" * 200_000)  # buffered, no newline: lost unless flushed
        exit_process(3)
    """)
    assert proc.returncode == 3
    assert proc.stdout == "x" * 200_000
    assert proc.stderr == "handler ran\n"


def test_a_running_non_daemon_thread_is_waited_for(tmp_path):
    done = tmp_path / "done"
    proc = _run(f"""
        import threading, time
        from pathlib import Path
        threading.Thread(target=lambda: (time.sleep(0.5), Path({str(done)!r}).write_text("yes"))).start()
        exit_process(0)
    """)
    assert proc.returncode == 0
    assert done.read_text() == "yes"


def test_a_reader_that_went_away_is_no_error():
    # output still buffered when the reader is gone (`rag query | head -1`): the stock exit says
    # "Exception ignored ... BrokenPipeError" and exits 120
    proc = _run("""
        import os, sys
        read_end, write_end = os.pipe()
        os.close(read_end)
        sys.stdout = open(write_end, "w")
        sys.stdout.write("buffered, never read")
        exit_process(0)
    """)
    assert proc.returncode == 0
    assert proc.stderr == ""
