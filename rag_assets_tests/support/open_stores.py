"""Embedded Chroma stores and state databases a test module opened, released when the module ends.

chromadb keeps one client system per store path for the life of the process (a class-level cache
in SharedSystemClient, so that clients of one path share it); our runs rely on that to find a
store's segments loaded. Every test module indexes into its own temporary folders, so a test
worker would otherwise hold each of those stores' SQLite and HNSW files open until it exits: in a
full run one worker held over 1,023 descriptors and select() failed. The state databases' pooled
connections (rag_assets.index.state_db, one StateDB per URL per process) likewise. Relies on chromadb 1.x's
`SharedSystemClient._identifier_to_system` (a dict of identifier -> System) and `System.stop()`.
"""

from chromadb.api.shared_system_client import SharedSystemClient

from rag_assets.index import state_db


def open_systems() -> set[str]:
    """The identifiers (store paths) of the client systems open in this process now."""
    return set(SharedSystemClient._identifier_to_system)


def stop_systems_opened_since(before: set[str], under: str = "") -> int:
    """Stop and forget the client systems opened since `before` (only those whose store path
    starts with `under`, when given); how many."""
    stopped = 0
    for identifier in open_systems() - before:
        if not identifier.startswith(under):
            continue
        system = SharedSystemClient._identifier_to_system.pop(identifier, None)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        if system is not None:
            system.stop()
            stopped += 1
    return stopped


def open_state_databases() -> set[str]:
    return state_db.open_urls()


def close_state_databases_opened_since(before: set[str], under: str = "") -> None:
    for url in state_db.open_urls() - before:
        if under in url:
            state_db.close(url)
