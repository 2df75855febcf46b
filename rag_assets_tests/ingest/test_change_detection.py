import os
import time

from rag_assets.ingest.change_detection import detect_changes


def test_first_look_adds_everything_then_nothing_changes(tmp_path):
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "b.md").write_text("b")
    first = detect_changes(tmp_path, None, settle_seconds=0)
    assert sorted(r.doc_path for r in first.added) == ["a.md", "b.md"]
    second = detect_changes(tmp_path, first.cursor, settle_seconds=0)
    assert not second.to_process and not second.deleted


def test_touch_is_not_a_change_but_an_edit_is(tmp_path):
    path = tmp_path / "a.md"
    path.write_text("a")
    c1 = detect_changes(tmp_path, None, settle_seconds=0)
    os.utime(path, (time.time() + 5, time.time() + 5))
    c2 = detect_changes(tmp_path, c1.cursor, settle_seconds=0)
    assert not c2.to_process and c2.touched == 1
    path.write_text("edited")
    c3 = detect_changes(tmp_path, c2.cursor, settle_seconds=0)
    assert [r.doc_path for r in c3.changed] == ["a.md"]


def test_deleted_and_renamed(tmp_path):
    (tmp_path / "a.md").write_text("a")
    c1 = detect_changes(tmp_path, None, settle_seconds=0)
    (tmp_path / "a.md").rename(tmp_path / "renamed.md")
    c2 = detect_changes(tmp_path, c1.cursor, settle_seconds=0)
    assert c2.deleted == ["a.md"] and [r.doc_path for r in c2.added] == ["renamed.md"]
    assert c2.added[0].content_hash == c1.added[0].content_hash


def test_file_still_being_written_waits_for_a_stable_tick(tmp_path):
    path = tmp_path / "growing.md"
    path.write_text("part one")
    now = time.time()
    c1 = detect_changes(tmp_path, None, settle_seconds=60, now=now)
    assert c1.unstable == ["growing.md"] and not c1.to_process
    with open(path, "a") as fh:
        fh.write(" and part two")
    c2 = detect_changes(tmp_path, c1.cursor, settle_seconds=60, now=now + 1)
    assert c2.unstable == ["growing.md"] and not c2.to_process  # size moved again
    c3 = detect_changes(tmp_path, c2.cursor, settle_seconds=60, now=now + 2)
    assert [r.doc_path for r in c3.added] == ["growing.md"]  # same size and mtime as last tick


def test_tick_counts_change_events_so_a_revert_is_a_new_one(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("version A")
    first = detect_changes(tmp_path, None, settle_seconds=0)
    assert first.tick == 1
    assert detect_changes(tmp_path, None, settle_seconds=0).tick == first.tick  # the same look again: same tick
    quiet = detect_changes(tmp_path, first.cursor, settle_seconds=0)
    assert not quiet.any and quiet.tick == 1
    doc.write_text("version B")
    to_b = detect_changes(tmp_path, quiet.cursor, settle_seconds=0)
    doc.write_text("version A")
    back_to_a = detect_changes(tmp_path, to_b.cursor, settle_seconds=0)
    assert [c.content_hash for c in back_to_a.changed] == [c.content_hash for c in first.added]
    assert (to_b.tick, back_to_a.tick) == (2, 3)


def test_a_just_saved_file_is_taken_in_the_same_look_once_it_settles(tmp_path):
    path = tmp_path / "saved.md"
    path.write_text("# Saved\n\nA paragraph.\n")
    started = time.monotonic()
    changes = detect_changes(tmp_path, None, settle_seconds=0.5, wait=True)
    assert [r.doc_path for r in changes.added] == ["saved.md"] and not changes.unstable
    assert time.monotonic() - started < 10  # one short wait (0.5 s), not one per file or a fixed pause


def test_a_file_written_during_the_wait_is_left_for_the_next_look(tmp_path):
    import threading

    path = tmp_path / "growing.md"
    path.write_text("part one")

    stop = threading.Event()

    def keep_writing():  # until the look is over: it cannot end before the look saw it move
        while not stop.wait(0.05):
            with open(path, "a") as fh:
                fh.write(" and more")

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        changes = detect_changes(tmp_path, None, settle_seconds=1.0, wait=True)
    finally:
        stop.set()
        writer.join()
    assert changes.unstable == ["growing.md"] and not changes.to_process
    later = detect_changes(tmp_path, changes.cursor, settle_seconds=1.0, wait=True)  # quiet now: settles
    assert [r.doc_path for r in later.added] == ["growing.md"]


def test_a_page_out_of_scope_is_never_added_and_one_that_leaves_it_is_deleted(tmp_path):
    english = ("Run the installer from your terminal and follow the prompts. The installer checks your system, "
               "downloads the packages the tool needs and writes a configuration file in your home folder.")
    spanish = ("Ejecute el instalador desde su terminal y siga las instrucciones. El instalador comprueba su "
               "sistema, descarga los paquetes que necesita y escribe un archivo de configuración en su carpeta. "
               "Cuando termine, abra una nueva terminal y ejecute el comando de versión para comprobarlo.")
    (tmp_path / "a.md").write_text(f"# A\n\n{english}\n")
    (tmp_path / "b.md").write_text(f"# B\n\n{english}\n")
    (tmp_path / "ignored.md").write_text("# I\n")
    (tmp_path / ".ragignore").write_text("ignored.md\n")
    first = detect_changes(tmp_path, None, settle_seconds=0)
    assert sorted(r.doc_path for r in first.added) == ["a.md", "b.md"]
    (tmp_path / "b.md").write_text(f"---\ndraft: true\n---\n# B\n\n{english}\n")
    (tmp_path / "c.md").write_text(f"# C\n\n{spanish}\n")
    later = detect_changes(tmp_path, first.cursor, settle_seconds=0, default_language="en")
    assert later.added == [] and later.changed == [] and later.deleted == ["b.md", "c.md"]
    (tmp_path / "b.md").write_text(f"# B\n\n{english}\n")  # back in scope: a change like any other
    again = detect_changes(tmp_path, later.cursor, settle_seconds=0, default_language="en")
    assert [r.doc_path for r in again.changed] == ["b.md"] and again.deleted == []
