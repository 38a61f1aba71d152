"""Names that look the same are the same name: model entries' names and user names.

A name is stored in its NFKC form with its spaces collapsed (``name_check``, the display form)
and compared on strings derived from it:

- ``name_key``: the display form case-folded (NFKC_Casefold), so ``GPT-4o-API``,
  ``gpt-4o-api`` and the same in full-width letters (U+FF27 U+FF30 U+FF34...) are one name;
- ``name_skeleton``: the Unicode TR39 skeleton (NFD, each character mapped to its prototype
  by the confusables table, NFD again), then case-folded and without combining marks, so
  ``GPT-4o-API`` with a Cyrillic o (U+043E), ``Human`` with a Cyrillic a (U+0430) and
  ``GPT-4o-API`` with a trailing U+0301 (which makes the I an I-acute) look like
  ``GPT-4o-API`` and ``Human``;
- ``name_skeleton(folded=True)``: the same of the key, so a look-alike of another case of a
  name is one too: ``gpt-4o-api`` with a Cyrillic o beside ``GPT-4o-API``. Both are needed:
  TR39 is made for text as written, and maps some capitals and small letters apart (capital
  I to l, small i to itself; Greek capitals to Latin ones, Greek small letters mostly not).

``name_check`` refuses what cannot be seen: control, format, private-use, surrogate and
unassigned code points (Unicode categories Cc, Cf, Co, Cs, Cn: the bidi controls such as the
right-to-left override, zero-width spaces and joiners, the byte-order mark), the other default
ignorable code points (variation selectors, Hangul fillers, the combining grapheme joiner),
line and paragraph separators, a combining mark with nothing to sit on, and a name with no
visible character at all.

The confusables table is UTS #39's ``confusables.txt`` as the ``confusable-homoglyphs``
package ships it (``confusables.json``, read from the installed package; nothing is
downloaded). That file lists each source with its prototype in both directions; the direction
is recovered here: every prototype is a sequence of several characters or has several
sources, and every source is one character listed once, so each group of look-alikes is a star
around its prototype. A pair of single characters that only look like each other keeps the
one that NFD leaves alone, else the lower code point, as its prototype (any fixed choice of
an NFD-stable one gives the same equalities).
"""

from __future__ import annotations

import json
import unicodedata
from functools import cache
from importlib import resources

MAX_KEY_CHARS = 800
"""The longest key (``name_key``) the unique columns hold: NFKC and case folding can make a
200-character name's key longer than the name."""
MAX_SKELETON_BYTES = 2000
"""The longest skeleton (UTF-8) a name may have: the unique index on it stays small
(PostgreSQL refuses B-tree entries over about 2700 bytes); 95 Hangul syllables reach it."""

_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Co": "a private-use character",
    "Cs": "a surrogate",
    "Cn": "an unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
_IGNORABLE_RANGES = (
    # Default_Ignorable_Code_Point (DerivedCoreProperties.txt) that are not Cf or Cn,
    # and the blank Braille pattern, which shows nothing either.
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0x1D173, 0x1D17A),  # musical symbol formatting
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
_MARKS = ("Mn", "Me")


class NameRefused(ValueError):
    """A name that cannot be told apart from others: the message says which character."""


def _ignorable(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


def _refused(char: str) -> str | None:
    """Return what is wrong with ``char`` in a name, None if it may be in one."""
    if char in "\t\n\r":
        return "a tab or line break"
    category = unicodedata.category(char)
    if category in _REFUSED_CATEGORIES:
        return _REFUSED_CATEGORIES[category]
    if _ignorable(char):
        return "an invisible character"
    return None


def _describe(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}{' ' + name if name else ''}"


def _collapse(text: str) -> str:
    """Every run of spaces as one space (HTML shows them so), none at either end."""
    return " ".join(text.split())


def _visible(text: str) -> str:
    """NFKC, without what ``name_check`` refuses, spaces collapsed: what a reader sees."""
    kept = "".join(c for c in unicodedata.normalize("NFKC", text) if _refused(c) is None)
    return _collapse(kept)


def name_check(text: str, *, max_length: int = 200) -> str:
    """Return ``text`` in its display form (NFKC, spaces collapsed and trimmed).

    Raises:
        NameRefused: It holds a character nobody can see or that changes how the rest is
            shown, starts with a combining mark, has no visible character, or is longer than
            ``max_length`` once normalised.
    """
    normal = unicodedata.normalize("NFKC", text)
    for position, char in enumerate(normal, start=1):
        problem = _refused(char)
        if problem is not None:
            raise NameRefused(
                f"character {position} is {problem} ({_describe(char)}): a name may hold "
                "visible characters and spaces only"
            )
    clean = _collapse(normal)
    if not any(unicodedata.category(c) not in _MARKS for c in clean):
        raise NameRefused("expected a name with at least one visible character")
    if unicodedata.category(clean[0]) in (*_MARKS, "Mc"):
        raise NameRefused(
            f"it starts with a combining mark ({_describe(clean[0])}), which has no letter to "
            "sit on"
        )
    if len(clean) > max_length:
        raise NameRefused(
            f"expected at most {max_length} characters once normalised (NFKC), got {len(clean)}"
        )
    if None in name_skeletons(clean):
        raise NameRefused("this name is too long to compare with the others: choose a shorter one")
    return clean


def name_key(text: str) -> str:
    """Return the form names are equal in: NFKC, case-folded (NFKC_Casefold), spaces collapsed.

    Total: a name that ``name_check`` would refuse (one stored before it existed) gets the key
    of what a reader sees of it.
    """
    return unicodedata.normalize("NFKC", _visible(text).casefold())


@cache
def _prototypes() -> dict[str, str]:
    """Return each confusable character's prototype, as the skeleton maps it (NFD)."""
    data = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text()
    pairs: dict[str, list[dict[str, str]]] = json.loads(data)

    def strip(glyph: str) -> str:
        # confusables.txt wraps right-to-left glyphs in its comments in LRM/RLM marks.
        return glyph.replace("\u200e", "").replace("\u200f", "")

    neighbours: dict[str, set[str]] = {}
    for glyph, listed in pairs.items():
        for alike in listed:
            a, b = strip(glyph), strip(alike["c"])
            if a and b and a != b:
                neighbours.setdefault(a, set()).add(b)
                neighbours.setdefault(b, set()).add(a)
    table: dict[str, str] = {}
    for glyph, alikes in neighbours.items():
        if len(glyph) > 1 or len(alikes) > 1:  # a prototype: its sources map to it
            for source in alikes:
                table[source] = glyph
        else:
            (other,) = alikes
            if len(other) == 1 and len(neighbours[other]) == 1 and _first(other, glyph):
                table[glyph] = other  # a pair of single characters

    def apply(text: str) -> str:
        return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in text))

    closed = {}
    for source, prototype in table.items():
        value = apply(unicodedata.normalize("NFD", prototype))
        for _ in range(8):  # the data is idempotent; this only guards against a change in it
            again = apply(value)
            if again == value:
                break
            value = again
        closed[source] = value
    return closed


def _first(a: str, b: str) -> bool:
    """Whether ``a`` is the prototype of a pair: the one that NFD leaves alone (a CJK
    compatibility ideograph maps to the ideograph it decomposes to), else the lower."""
    stable_a = unicodedata.normalize("NFD", a) == a
    stable_b = unicodedata.normalize("NFD", b) == b
    return stable_a and not stable_b if stable_a != stable_b else a < b


def name_skeleton(text: str, *, folded: bool = False) -> str:
    """Return what ``text`` looks like: equal skeletons are names a reader cannot tell apart.

    The TR39 skeleton of the visible form (NFD, each character to its prototype, NFD),
    case-folded, without combining marks (accents, a stray U+0301). ``folded``: of the
    case-folded form (``name_key``) instead. Total, like ``name_key``.
    """
    table = _prototypes()
    visible = name_key(text) if folded else _visible(text)
    decomposed = unicodedata.normalize("NFD", visible)
    mapped = unicodedata.normalize("NFD", "".join(table.get(c, c) for c in decomposed))
    folded_form = unicodedata.normalize("NFD", mapped.casefold())
    return "".join(c for c in folded_form if unicodedata.category(c) not in _MARKS)


def name_skeletons(text: str) -> tuple[str | None, str | None]:
    """Return both skeletons of ``text``, each None when it is too long to index."""
    both = (name_skeleton(text), name_skeleton(text, folded=True))
    return both[0] if _fits(both[0]) else None, both[1] if _fits(both[1]) else None


def _fits(skeleton: str) -> bool:
    return len(skeleton.encode()) <= MAX_SKELETON_BYTES
