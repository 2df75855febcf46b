"""Language codes as every layer reads them."""

import pytest

from rag_assets.vocabulary.languages import language_code, parse_languages, same_language


def test_language_codes_are_folder_names_that_name_a_language():
    assert [language_code(n) for n in ("es", "pt-BR", "zh_cn", "zh-Hans", "EN")] == ["es", "pt-BR", "zh-CN", "zh-Hans", "en"]
    assert [language_code(n) for n in ("docs", "js", "go", "api", "v2")] == [None] * 5


def test_two_codes_name_one_language_when_their_first_parts_agree():
    assert same_language("pt-BR", "pt") and same_language("zh_CN", "zh-TW") and not same_language("en", "")


@pytest.mark.parametrize("raw", ["english", "all,es", "e"])
def test_languages_setting_is_validated(raw):
    with pytest.raises(ValueError):
        parse_languages(raw)
