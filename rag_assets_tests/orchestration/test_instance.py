"""The instance the CLI's runs land on (rag_assets.orchestration.instance): opened by one process at a time,
and nothing left behind by the lock that serialises it."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_assets_tests.support.dagster_instance import instance_yaml
from rag_assets_tests.support.environment import subprocess_env

pytestmark = pytest.mark.system

HOLD = ("import sys; from pathlib import Path; from rag_assets.orchestration.instance import creation_lock\n"
        "with creation_lock(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.readline()\n")
OPEN = ("import sys; from rag_assets.orchestration.instance import get_instance\n"
        "print('opening', flush=True); instance = get_instance(); print('opened', len(instance.get_runs()), flush=True)\n")


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home))  # the repository's instance, its files under home
    return home


def _waits_on(pid: int, folder: Path) -> bool:
    """/proc/locks shows process pid blocked on a flock of folder (a line `N: -> FLOCK ... pid dev:inode ...`)."""
    inode = str(folder.stat().st_ino)
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        if parts[1:3] == ["->", "FLOCK"] and parts[5] == str(pid) and parts[6].rsplit(":", 1)[-1] == inode:
            return True
    return False


def test_a_process_opening_the_instance_waits_while_another_holds_its_lock(tmp_path):
    home = _home(tmp_path)
    env = subprocess_env(tmp_path, DAGSTER_HOME=str(home))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(home)], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    opener = None
    try:
        assert holder.stdout.readline().strip() == "held"
        opener = subprocess.Popen([sys.executable, "-c", OPEN], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        assert opener.stdout.readline().strip() == "opening"
        deadline = time.monotonic() + 300  # only a guard against a hang: the wait is seen in /proc/locks
        while not _waits_on(opener.pid, home):
            assert opener.poll() is None, f"opened the instance while another process held its lock: {opener.communicate()}"
            assert time.monotonic() < deadline, "the opener neither waited for the lock nor finished"
            time.sleep(0.05)
        assert not (home / "storage").exists()  # nothing created while it waits
        holder.stdin.close()  # let go: the opener gets the lock and opens the instance
        out, err = opener.communicate(timeout=300)
        assert opener.returncode == 0 and out.strip() == "opened 0", err
        assert (home / "storage" / "history" / "runs.db").is_file()
    finally:
        for proc in filter(None, (holder, opener)):
            proc.kill()
            proc.wait()


def test_opening_the_instance_leaves_no_lock_file_in_the_temporary_folder(tmp_path):
    home = _home(tmp_path)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = subprocess_env(tmp_path, DAGSTER_HOME=str(home), TMPDIR=str(temporary))
    for fresh in (True, False):  # creating the instance, then opening it again
        proc = subprocess.run([sys.executable, "-c", OPEN], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.split() == ["opening", "opened", "0"], proc.stderr
        assert sorted(os.listdir(temporary)) == [], f"left in the temporary folder (fresh instance: {fresh})"
    assert sorted(p.name for p in home.iterdir() if p.name.startswith(".")) == []  # nor a hidden file in the home
