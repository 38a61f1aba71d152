"""The search box's query language, one for both databases, and the highlighting of a hit.

A query is terms separated by spaces; a step matches when its response has every term:

- ``mirror`` a word (any case; letters and digits, anything else separates words, so
  ``don't`` is the phrase ``"don t"``, as both indexes store it),
- ``"my own hand"`` a phrase: these words, one after the other,
- ``mirr*`` a word starting with ``mirr``,
- ``-left`` or ``-"turn left"`` leaves out the steps that have it.

A query of exclusions alone is refused (it would list every step), as is a quote left open or a
``*`` anywhere but at the end of a word. ``sqlite_match`` writes a query for SQLite's FTS5
``MATCH`` and ``postgres_tsquery`` one for PostgreSQL's ``to_tsquery('simple', ...)``; both are
built from the words alone (letters and digits), so nothing a visitor types reaches either
database's query syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_QUERY_CHARS = 200
MAX_TERMS = 8
MIN_PREFIX_CHARS = 2

_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r'\s*(-?)(?:"([^"]*)("?)|([^\s"]+))')


class QueryError(ValueError):
    """A query the language does not allow; the message says why, for the person who typed it."""


@dataclass(frozen=True)
class Term:
    """One term: its words in order (one for a word, several for a phrase)."""

    words: tuple[str, ...]
    prefix: bool = False
    excluded: bool = False


@dataclass(frozen=True)
class Query:
    """A parsed query: the terms a response must have, and those it must not."""

    terms: tuple[Term, ...]

    @property
    def wanted(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if not t.excluded)

    @property
    def excluded(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.excluded)


def words_of(text: str) -> list[str]:
    """Return the words of ``text`` as both databases' indexes split them, lower-cased."""
    return [w.lower() for w in _WORD.findall(text)]


def parse_query(text: str) -> Query:
    """Return the query ``text`` states; QueryError says what is wrong with it."""
    text = text.strip()
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"a query has at most {MAX_QUERY_CHARS} characters, got {len(text)}")
    terms: list[Term] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:  # only spaces were left
            break
        position = match.end()
        minus, phrase, closed, bare = match.groups()
        if phrase is not None:
            if not closed:
                raise QueryError('a quote is not closed: write phrases as "my own hand"')
            if "*" in phrase:
                raise QueryError('"*" ends a word outside quotes, e.g. mirr*')
            words = words_of(phrase)
            prefix = False
        else:
            body = bare.rstrip("*")
            prefix = body != bare
            if "*" in body or bare.count("*") > 1:
                raise QueryError(f'"*" goes once at the end of a word, e.g. mirr*, not {bare!r}')
            words = words_of(body)
            if prefix and (len(words) != 1 or len(words[0]) < MIN_PREFIX_CHARS):
                raise QueryError(
                    f"a prefix is one word of at least {MIN_PREFIX_CHARS} letters before the "
                    f"*, e.g. mirr*, not {bare!r}"
                )
        if not words:
            continue  # punctuation alone: nothing to look for
        terms.append(Term(words=tuple(words), prefix=prefix, excluded=bool(minus)))
    if len(terms) > MAX_TERMS:
        raise QueryError(f"a query has at most {MAX_TERMS} terms, got {len(terms)}")
    query = Query(terms=tuple(terms))
    if terms and not query.wanted:
        raise QueryError("add a word to find: a query of exclusions (-word) alone matches all")
    return query


def sqlite_match(query: Query) -> str:
    """Return ``query`` as an FTS5 MATCH expression (every word in double quotes)."""

    def term(t: Term) -> str:
        quoted = '"' + " ".join(t.words) + '"'
        return quoted + "*" if t.prefix else quoted

    wanted = " AND ".join(term(t) for t in query.wanted)
    if not query.excluded:
        return wanted
    return f"({wanted}) NOT ({' OR '.join(term(t) for t in query.excluded)})"


def postgres_tsquery(query: Query) -> str:
    """Return ``query`` as a ``to_tsquery('simple', ...)`` text (words are letters and digits)."""

    def term(t: Term) -> str:
        text = " <-> ".join(t.words)
        if t.prefix:
            text += ":*"
        text = f"({text})" if len(t.words) > 1 else text
        return "!" + text if t.excluded else text

    return " & ".join(term(t) for t in query.terms)


@dataclass(frozen=True)
class Part:
    """A piece of a response: ``hit`` when it is a word the query matched."""

    text: str
    hit: bool


def highlight(text: str, query: Query, *, width: int = 240) -> list[Part]:
    """Return an excerpt of ``text`` of about ``width`` characters around its first hit, cut
    into parts, the words the query's wanted terms matched marked as hits (plain text: the
    template escapes every part)."""
    spans = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]
    hits: set[int] = set()
    for t in query.wanted:
        n = len(t.words)
        for i in range(len(spans) - n + 1):
            words = [spans[i + j][2] for j in range(n)]
            last_ok = words[-1].startswith(t.words[-1]) if t.prefix else words[-1] == t.words[-1]
            if words[:-1] == list(t.words[:-1]) and last_ok:
                hits.update(range(i, i + n))
    first = spans[min(hits)][0] if hits else 0
    start = max(0, first - width // 3)
    end = min(len(text), start + width)
    if start > 0:  # start at a word's beginning
        while start < first and text[start - 1].isalnum():
            start += 1
    parts: list[Part] = [Part("…", False)] if start > 0 else []
    cursor = start
    for i, (a, b, _word) in enumerate(spans):
        if i not in hits or b <= start or a >= end:
            continue
        if a > cursor:
            parts.append(Part(text[cursor:a], False))
        parts.append(Part(text[a:b], True))
        cursor = b
    if cursor < end:
        parts.append(Part(text[cursor:end], False))
    if end < len(text):
        parts.append(Part("…", False))
    return parts
