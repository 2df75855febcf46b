"""The documents and the index the conformance suite (rag_assets_tests/contracts/) runs the callers'
contracts on: a skirmish game's rules written for these tests in the manner of the rules-bot contract's
fixtures (`rules-1-phases.md` with its Movement Phase, `weapon-rules.md`), a hundred short rule pages for
its performance test, and a pipeline (real model, real Chroma, a real Dagster instance) over Settings of
a temporary folder."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator
from uuid import UUID, uuid4

from rag_assets.config import Settings
from rag_assets_tests.support import dagster_instance

PHASES = """# Turn phases

Each turning point is played in three phases. Players alternate activating one operative at a time.

## Movement Phase

In the Movement Phase each operative may make one normal move of up to its Movement characteristic,
measured in inches. Instead of a normal move it may dash three inches, or fall back from an enemy
within engagement range, or charge an enemy it can see. An operative cannot move through other
operatives, and it must stay on the killzone.

## Shooting Phase

In the Shooting Phase an operative that did not dash or fall back may shoot once with a ranged weapon
at a visible enemy operative within the weapon's range. Roll the attack dice, then the defender rolls
defence dice for each hit.

## Barricade

A barricade is a light terrain feature about one inch tall. An operative within one inch of a
barricade can cross it by spending two inches of its movement. An enemy shooting at an operative in
cover behind a barricade must retain one fewer normal success.
"""

WEAPONS = """# Weapon rules

Every ranged and melee weapon has a profile of attacks, ballistic skill and damage, followed by its
special rules.

## Lethal

A weapon with Lethal 5+ scores a critical hit on an unmodified roll of 5 or 6 instead of only a 6.

## Piercing

Piercing 1 removes one of the defender's defence dice before they are rolled. Shooting over a
barricade does not reduce Piercing.

## Blast

A Blast weapon also hits every other operative within two inches of the target, friend or foe.
"""

META = {"source": "Core Rules v3.1", "doc_type": "core-rules", "last_update_date": "2025-01-15"}
DOC_TYPES = {"core-rules", "faq", "team-rules", "ops", "killzone"}

# the performance test's hundred pages: one piece of equipment, team rule or FAQ answer each
_THINGS = ["grenade", "ladder", "smoke", "portable shield", "med kit", "climbing rope", "ammo cache", "comms device",
           "mine", "barbed wire"]
_FACTIONS = ["Veterans", "Scouts", "Hunters", "Raiders", "Pathfinders", "Marines", "Cultists", "Troopers", "Legionaries",
             "Commandos"]


@dataclass
class RuleDocument:  # the rules-bot contract's input type, as its callers declare it
    document_id: UUID
    filename: str
    content: str  # Full markdown
    metadata: Dict[str, Any]


def rule_documents() -> list[RuleDocument]:
    """The contract's two fixture documents."""
    return [RuleDocument(uuid4(), "rules-1-phases.md", PHASES, dict(META)),
            RuleDocument(uuid4(), "weapon-rules.md", WEAPONS, dict(META))]


def hundred_documents() -> list[RuleDocument]:
    docs = []
    for i in range(100):
        thing, faction = _THINGS[i % 10], _FACTIONS[i // 10]
        doc_type = ("team-rules", "faq", "ops", "killzone")[i % 4]
        text = (f"# {faction}: {thing}\n\n## Using the {thing}\n\nA {faction} operative carrying the {thing} may use "
                f"it once per turning point as a free action: roll one die and on a {2 + i % 5}+ it takes effect "
                f"until the end of the turning point.\n\n## Restrictions\n\nOnly one {thing} may be used by the "
                f"{faction} each turning point, and never within engagement range of an enemy.\n")
        docs.append(RuleDocument(uuid4(), f"equipment-{i:03d}.md", text,
                                 {**META, "doc_type": doc_type, "source": f"{faction} Team Rules"}))
    return docs


def contract_settings(root: Path, **overrides) -> Settings:
    """Settings of an index whose every path is under root (an empty docs folder), no environment read."""
    (root / "docs").mkdir(parents=True, exist_ok=True)
    return Settings.from_env({}, docs_dir=root / "docs", chroma_path=root / "chroma", state_dir=root / "state",
                             cache_dir=root / "cache", eval_dir=root / "eval", eval_results_dir=root / "eval_results",
                             corpora_dir=root / "corpora", **overrides)


@contextmanager
def dagster_home_in(root: Path) -> Iterator[Path]:
    """DAGSTER_HOME set to a test instance under root while the block runs (the ingest's runs need one)."""
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_instance.instance_yaml(home))
    before = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        yield home
    finally:
        if before is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = before
