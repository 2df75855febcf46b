"""docs/configuration.md's table is what the declarations give (`python -m rag_assets.config.docs_table --write`)."""

from rag_assets.config import ENV_VARS, SWITCHES
from rag_assets.config.docs_table import PAGE, page_with_table, table


def test_the_committed_table_is_the_one_the_declarations_give():
    page = PAGE.read_text(encoding="utf-8")
    assert page == page_with_table(page), "run: python -m rag_assets.config.docs_table --write"


def test_the_table_names_every_setting_and_switch_once():
    rows = [line for line in table().splitlines()[2:]]
    named = [row.split("|")[1].strip().strip("`") for row in rows]
    assert sorted(named) == sorted([*ENV_VARS.values(), *(s.env for s in SWITCHES.values())])
