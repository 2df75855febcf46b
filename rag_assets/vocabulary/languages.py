"""Language codes, the same for every layer: the settings validate them (RAG_LANGUAGES,
RAG_DEFAULT_LANGUAGE), discovery gives each page one (rag_assets.ingest.languages), retrieval filters
and tokenises by them.

A code is an ISO 639-1 language, optionally with a region or script: ``es``, ``pt-BR``, ``zh-Hans``
(``pt_BR`` and ``zh-cn`` are read as ``pt-BR`` and ``zh-CN``). Two codes name one language when their
first parts agree (``pt-BR`` is Portuguese, ``zh-CN`` and ``zh`` are Chinese).
"""

from __future__ import annotations

import re

ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en
eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka
kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl
nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw
ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu""".split())
_CODE = re.compile(r"^([a-z]{2})(?:[-_]([A-Za-z]{2}|[A-Za-z]{4}|\d{3}))?$", re.IGNORECASE)
UNDETERMINED = "und"
ALL_LANGUAGES = "all"
DEFAULT_LANGUAGE = "default"


def language_code(name: str) -> str | None:
    """A folder or suffix name as a language code (``pt_BR`` -> ``pt-BR``), or None when it is not one."""
    match = _CODE.match(name or "")
    if not match or match.group(1).lower() not in ISO_639_1:
        return None
    region = match.group(2)
    if region is None:
        return match.group(1).lower()
    region = region.upper() if len(region) == 2 else region.title()
    return f"{match.group(1).lower()}-{region}"


def primary(code: str) -> str:
    """The language part of a code: ``pt-BR`` -> ``pt``."""
    return (code or "").replace("_", "-").split("-", 1)[0].lower()


def same_language(a: str, b: str) -> bool:
    return bool(a) and bool(b) and primary(a) == primary(b)


def normalise(code) -> str:
    """A declared language (frontmatter, config) as a code; "" when it is not one."""
    if not isinstance(code, str):
        return ""
    return language_code(code.strip()) or ""


def split_list(raw: str | None, sep: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in (raw or "").split(sep) if v.strip())


def parse_languages(raw: str | None) -> tuple[str, ...]:
    """RAG_LANGUAGES / --languages: "default", "all", or codes ("en,es"). Raises ValueError."""
    values = split_list((raw or DEFAULT_LANGUAGE).replace(" ", ","), ",")
    lowered = [v.lower() for v in values]
    if lowered in ([DEFAULT_LANGUAGE], [ALL_LANGUAGES]):
        return (lowered[0],)
    codes = []
    for value in values:
        code = language_code(value)
        if code is None:
            raise ValueError(f"{value!r} is not a language code (give 'default', 'all' or codes such as en,es,pt-BR)")
        codes.append(code)
    return tuple(codes) or (DEFAULT_LANGUAGE,)
