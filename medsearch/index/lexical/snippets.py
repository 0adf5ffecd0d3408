"""Snippets and highlights: where the query's terms occur in a text, marked ``<b>..</b>``.

Matching uses the index's own analyzer on the original text (Greek letters mapped back to
their original characters), so a highlight is exactly a token the query matched:
``COVID-19`` lights up for ``covid19``, ``α`` for ``alpha``, ``studies`` for ``study``.
The CLI and TUI should not parse the markers with regexes over raw text: they call
:func:`snippet_spans`, which returns the plain text and the highlighted ranges.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from medsearch.query.normalize import has_greek, normalize_with_offsets

MARK_OPEN = "<b>"
MARK_CLOSE = "</b>"
SNIPPET_CHARS = 240
_CONTEXT = 40  # characters shown before the first highlighted term of a window
_ELLIPSIS = "…"


def highlight_spans(text: str, terms: Iterable[str], analyzer: Any) -> list[tuple[int, int]]:
    """``(start, end)`` character ranges of ``text`` whose tokens are among ``terms``.

    ``terms`` are analyzer tokens as in ``LexicalResult.terms``; one ending in ``*`` is a
    prefix. ``analyzer`` is the tantivy ``TextAnalyzer`` the terms came from.
    """
    exact = {t for t in terms if not t.endswith("*")}
    prefixes = tuple(t[:-1] for t in terms if t.endswith("*") and len(t) > 1)
    if not text or not (exact or prefixes):
        return []
    if has_greek(text):
        normalized, origin = normalize_with_offsets(text)
    else:
        normalized, origin = text, []
    spans: list[tuple[int, int]] = []
    for token in analyzer.pre_tokenize(normalized).tokens:
        word = token.text
        if word in exact or (prefixes and word.startswith(prefixes)):
            start, end = token.char_offset_from, token.char_offset_to
            if origin:
                start, end = origin[start], origin[end - 1] + 1
            if spans and _joined(text, spans[-1][1], start):
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
    return spans


def _joined(text: str, end: int, start: int) -> bool:
    """One highlight for ``COVID-19``, ``IL6`` and the halves of a spelled-out Greek letter."""
    gap = text[end:start]
    return len(gap) <= 2 and not any(c.isspace() or c.isalnum() for c in gap)


def mark(
    text: str, spans: Iterable[tuple[int, int]], start: int = 0, end: int | None = None
) -> str:
    """``text[start:end]`` with every span inside it wrapped in ``<b>..</b>``."""
    end = len(text) if end is None else end
    out: list[str] = []
    cursor = start
    for s, e in spans:
        if s < cursor or e > end:
            continue
        out.append(_clean(text[cursor:s]))
        out.append(MARK_OPEN + _clean(text[s:e]) + MARK_CLOSE)
        cursor = e
    out.append(_clean(text[cursor:end]))
    return "".join(out)


def make_snippet(text: str, spans: list[tuple[int, int]], max_chars: int = SNIPPET_CHARS) -> str:
    """The window of ``text`` (about ``max_chars``) showing the most distinct matches."""
    text = text.replace("\n", " ")  # same length, so spans stay valid
    if len(text) <= max_chars:
        return mark(text, spans)
    start = _best_start(text, spans, max_chars)
    end = min(len(text), start + max_chars)
    if end < len(text):
        cut = text.rfind(" ", start, end)
        if cut > start + max_chars // 2 and not any(s < cut < e for s, e in spans):
            end = cut
    prefix = _ELLIPSIS if start > 0 else ""
    suffix = _ELLIPSIS if end < len(text) else ""
    return prefix + mark(text, spans, start, end).strip() + suffix


def _best_start(text: str, spans: list[tuple[int, int]], max_chars: int) -> int:
    best, best_key = 0, (-1, -1)
    for i, (first, _) in enumerate(spans[:200]):
        start = max(0, first - _CONTEXT)
        inside = [(s, e) for s, e in spans[i:] if e <= start + max_chars]
        key = (len({text[s:e].lower() for s, e in inside}), len(inside))
        if key > best_key:
            best, best_key = start, key
    if best > 0:  # begin at a word boundary, without cutting into the first match
        limit = min(best + 20, next(s for s, _ in spans if s >= best))
        space = text.find(" ", best, limit)
        if space >= 0:
            best = space + 1
    return best


def _clean(segment: str) -> str:
    """Keep literal markers in the source text from being read as highlights."""
    return segment.replace(MARK_OPEN, "<b >").replace(MARK_CLOSE, "</b >")


def snippet_spans(snippet: str) -> tuple[str, list[tuple[int, int]]]:
    """``"a <b>b</b> c"`` -> ``("a b c", [(2, 3)])``: plain text and highlighted ranges."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    i = 0
    while True:
        open_at = snippet.find(MARK_OPEN, i)
        if open_at < 0:
            break
        close_at = snippet.find(MARK_CLOSE, open_at + len(MARK_OPEN))
        if close_at < 0:
            break
        before = snippet[i:open_at]
        inner = snippet[open_at + len(MARK_OPEN) : close_at]
        plain.append(before)
        length += len(before)
        spans.append((length, length + len(inner)))
        plain.append(inner)
        length += len(inner)
        i = close_at + len(MARK_CLOSE)
    plain.append(snippet[i:])
    return "".join(plain), spans
