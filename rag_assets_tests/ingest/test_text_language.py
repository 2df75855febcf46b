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


def test_a_word_two_languages_share_does_not_make_a_text_mixed():
    """German's informal "du" is French's "du": a German page that says "du" is German."""
    informal = ("Wenn du Astro zum ersten Mal installierst, brauchst du eine aktuelle Version von Node.js. Danach "
                "kannst du mit einem einzigen Befehl ein neues Projekt erstellen, und du wählst eine Vorlage aus. "
                "Du findest alle Dateien in deinem neuen Ordner und startest den Server, sobald du bereit bist.")
    assert detect(informal) == "de"
