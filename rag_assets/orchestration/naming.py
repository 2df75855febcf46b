"""What a corpus's Dagster objects are called. The default corpus keeps the names the project has
always had (`document_chunks`, the `documents` partitions, `docs_sensor`), so existing instances
keep their history; another corpus's carry its name (`my_docs/document_chunks`,
`my_docs__documents`, `my_docs__docs_sensor`) and form a group of their own."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from rag_assets.corpus import Corpus


@dataclass(frozen=True)
class CorpusNames:
    corpus: Corpus

    @property
    def prefix(self) -> list[str]:
        return [] if self.corpus.is_default else [self.corpus.name]

    def key(self, asset: str) -> dg.AssetKey:
        return dg.AssetKey([*self.prefix, asset])

    def group(self, default_group: str) -> str:
        """The default corpus's assets keep their stage groups; another corpus is one group."""
        return default_group if self.corpus.is_default else self.corpus.name

    def scoped(self, name: str) -> str:
        """A job, sensor, schedule or partitions name, unique per corpus."""
        return name if self.corpus.is_default else f"{self.corpus.name}__{name}"
