"""Highlighted terms for titles and abstracts, taken from the engine's own snippet.

The lexical index marks the tokens its analyzer matched (``<b>..</b>``, so ``COVID-19``
lights up for ``covid19``); :func:`snippet_spans` turns those marks into ranges. The
full abstract in the detail pane has no marks, so the marked words are looked up in it
as whole words, case-insensitively: what was highlighted in the snippet is highlighted
everywhere, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from medsearch.index.lexical.snippets import snippet_spans

HIGHLIGHT = "bold #ffd75f"


def snippet_terms(snippets: Iterable[str]) -> frozenset[str]:
    """The casefolded words the engine highlighted in ``snippets``."""
    terms: set[str] = set()
    for snippet in snippets:
        plain, spans = snippet_spans(snippet)
        terms.update(plain[a:b].lower() for a, b in spans if b > a)
    return frozenset(terms)


def term_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Ranges of ``text`` where a term occurs as a whole word (no letter or digit glued on)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lowered
        return []
    spans: list[tuple[int, int]] = []
    for term in terms:
        start = lowered.find(term)
        while start >= 0 and term:
            end = start + len(term)
            before = lowered[start - 1] if start else " "
            after = lowered[end] if end < len(lowered) else " "
            if not before.isalnum() and not after.isalnum():
                spans.append((start, end))
            start = lowered.find(term, start + 1)
    return _merge(spans)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def highlighted(text: str, terms: Iterable[str], style: str = "") -> Text:
    """``text`` as rich Text, each occurrence of a term drawn in the highlight style."""
    out = Text(text, style=style)
    for start, end in term_spans(text, terms):
        out.stylize(HIGHLIGHT, start, end)
    return out


def snippet_text(snippet: str, style: str = "") -> Text:
    """An engine snippet as rich Text with its own marks highlighted."""
    plain, spans = snippet_spans(snippet)
    out = Text(plain, style=style)
    for start, end in spans:
        out.stylize(HIGHLIGHT, start, end)
    return out
