"""The language of a page's text: believed when sure, and never from the names a text quotes."""

from rag_assets.ingest.text_language import detect, read
from rag_assets_tests.support.language_samples import DE, DISHES, EN, ES, FR, IT, MENU


def test_prose_in_one_language_is_read_as_it():
    assert [detect(t) for t in (EN, ES, FR, IT, DE)] == ["en", "es", "fr", "it", "de"]
    assert read(IT).hint == "it" and read("Benvenuti nella guida di installazione.").hint == "it"
    assert not read("Benvenuti nella guida di installazione.").sure  # too short to be sure


def test_english_full_of_italian_dish_names_is_not_italian():
    """A character model reads dish names as Italian; the grammar around them is English."""
    assert detect(MENU) != "it" and detect(DISHES) != "it"
    assert read(MENU).hint != "it" and read(DISHES).hint != "it"
