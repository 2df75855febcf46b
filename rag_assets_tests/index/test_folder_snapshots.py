"""folder_snapshots: the folder's looks stored in a real (SQLite) state database."""

import sqlalchemy as sa

from rag_assets.index import folder_snapshots
from rag_assets.index.state_db import StateDB, folder_snapshots as table, local_state_url


def fresh_process():
    folder_snapshots._CACHE.clear()


def test_a_look_is_stored_once_under_its_content_and_read_back_in_another_process(tmp_path):
    db = StateDB.open(local_state_url(tmp_path))
    look = {"files": {"a.md": [10, 1.5, "ab" * 32, ""]}, "pending": {}, "tick": 3}
    first = folder_snapshots.save(db, "docs_sensor", look)
    assert folder_snapshots.save(db, "docs_sensor", dict(look)) == first  # same content, same id, one row
    fresh_process()
    assert folder_snapshots.load(db, "docs_sensor", first) == look
    assert folder_snapshots.load(db, "rag watch", first) is None  # owners are kept apart
    assert folder_snapshots.load(db, "docs_sensor", "0" * 32) is None


def test_only_the_newest_looks_of_an_owner_are_kept(tmp_path):
    db = StateDB.open(local_state_url(tmp_path))
    ids = [folder_snapshots.save(db, "docs_sensor", {"files": {}, "pending": {}, "tick": i})
           for i in range(folder_snapshots.KEEP + 3)]
    other = folder_snapshots.save(db, "rag watch", {"files": {}, "pending": {}, "tick": 0})
    fresh_process()
    kept = [i for i in ids if folder_snapshots.load(db, "docs_sensor", i) is not None]
    assert kept == ids[-folder_snapshots.KEEP:]
    assert folder_snapshots.load(db, "rag watch", other) is not None  # another owner's are not pruned
    with db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() == folder_snapshots.KEEP + 1


def test_a_look_read_once_is_not_read_from_the_database_again(tmp_path):
    db = StateDB.open(local_state_url(tmp_path))
    snapshot = folder_snapshots.save(db, "docs_sensor", {"files": {}, "pending": {}, "tick": 1})
    fresh_process()
    loaded = folder_snapshots.load(db, "docs_sensor", snapshot)
    with db.write() as conn:
        conn.execute(sa.delete(table))
    assert folder_snapshots.load(db, "docs_sensor", snapshot) is loaded  # a quiet tick reads nothing
