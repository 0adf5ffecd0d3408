"""Text normalisation applied identically to indexed text and to query text.

tantivy's filters (lower-casing, ASCII folding, stemming) run in Rust inside the
analyzer; the one thing they cannot do is spell Greek letters out, and biomedical text
writes the same entity both ways (``α-synuclein`` / ``alpha-synuclein``, ``TNFα`` /
``TNF-alpha``). So before text reaches the analyzer, every Greek letter becomes its
English name, set apart from adjacent letters so ``TNFα`` tokenises like ``TNF alpha``.

Snippets must show the original characters, so :func:`normalize_with_offsets` also
returns, for every character of the normalised text, the index of the original
character it came from.

Query text may also arrive holding bytes that were not UTF-8 (:func:`repair_undecodable`).
"""

from __future__ import annotations

import re

_GREEK_NAMES = {
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "δ": "delta",
    "ε": "epsilon",
    "ϵ": "epsilon",
    "ζ": "zeta",
    "η": "eta",
    "θ": "theta",
    "ϑ": "theta",
    "ι": "iota",
    "κ": "kappa",
    "ϰ": "kappa",
    "λ": "lambda",
    "μ": "mu",
    "µ": "mu",  # U+00B5 MICRO SIGN, as in "µg"
    "ν": "nu",
    "ξ": "xi",
    "ο": "omicron",
    "π": "pi",
    "ϖ": "pi",
    "ρ": "rho",
    "ϱ": "rho",
    "σ": "sigma",
    "ς": "sigma",
    "τ": "tau",
    "υ": "upsilon",
    "φ": "phi",
    "ϕ": "phi",
    "χ": "chi",
    "ψ": "psi",
    "ω": "omega",
}
GREEK_NAMES: dict[str, str] = {
    **_GREEK_NAMES,
    **{k.upper(): v for k, v in _GREEK_NAMES.items() if k.upper() != k and len(k.upper()) == 1},
}


_GREEK = re.compile("[" + "".join(GREEK_NAMES) + "]")


def has_greek(text: str) -> bool:
    """Whether normalisation would change ``text`` (C-speed scans: ingest calls this a lot;
    ``isascii`` answers most text ~20x faster than the regex)."""
    return not text.isascii() and _GREEK.search(text) is not None


def _needs_space(char: str) -> bool:
    """A neighbour that would glue onto a spelled-out letter (``TNFα`` -> ``TNF alpha``)."""
    return char.isalpha() and char not in GREEK_NAMES


def _spelled(text: str, i: int) -> str:
    """The Greek letter ``text[i]`` spelled out, set apart from letters beside it."""
    piece = GREEK_NAMES[text[i]]
    if i > 0 and _needs_space(text[i - 1]):
        piece = " " + piece
    if i < len(text) - 1 and _needs_space(text[i + 1]):
        piece = piece + " "
    return piece


def normalize_text(text: str) -> str:
    """The text the analyzer sees: Greek letters spelled out, everything else unchanged.

    One substitution per Greek letter, not :func:`normalize_with_offsets`' loop over every
    character: ~1 in 10 real PubMed abstracts has a Greek letter (``µg``, ``TNF-α``), and
    that loop cost ~109 us for such an abstract against ~12 us, in ingest's parsers.
    """
    if not has_greek(text):
        return text  # the common case, no copy
    return _GREEK.sub(lambda match: _spelled(text, match.start()), text)


def normalize_with_offsets(text: str) -> tuple[str, list[int]]:
    """``(normalised, origin)`` where ``origin[i]`` is the index in ``text`` of char ``i``.

    ``origin`` has one extra final entry, ``len(text)``, so an end offset maps too.
    """
    out: list[str] = []
    origin: list[int] = []
    for i, char in enumerate(text):
        if char not in GREEK_NAMES:
            out.append(char)
            origin.append(i)
            continue
        piece = _spelled(text, i)
        out.append(piece)
        origin.extend([i] * len(piece))
    origin.append(len(text))
    return "".join(out), origin


_SURROGATE = re.compile("[\ud800-\udfff]")


def repair_undecodable(text: str) -> str:
    """``text`` with every lone surrogate made a real character, one for one.

    Python hands a command-line argument's bytes that are not UTF-8 over as lone
    surrogates (``caf\\xe9`` from a Latin-1 terminal or script arrives as
    ``caf\\udce9``), which nothing downstream can encode: tantivy, the tokenizers,
    JSON output and files all refuse them. Such a byte most likely came from a legacy
    8-bit encoding, so each one is read as Windows-1252 (Latin-1's printable letters and
    its own), and ``caf\\xe9`` searches ``café``. Any other lone surrogate (half of an
    emoji cut in two) becomes U+FFFD. One character for one keeps every position in the
    text valid for error messages.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_as_character, text)


def _as_character(match: re.Match[str]) -> str:
    code = ord(match.group())
    if not 0xDC80 <= code <= 0xDCFF:  # not an escaped byte: a broken UTF-16 pair
        return "\ufffd"
    byte = bytes([code - 0xDC00])
    try:
        return byte.decode("cp1252")
    except UnicodeDecodeError:  # the five bytes Windows-1252 leaves undefined
        return byte.decode("latin-1")


# Curly double quotes of every kind read as the straight one: PubMed's help ("Searching
# for a phrase") names only the straight quote, and a strategy pasted from a word
# processor or a PDF carries “ ” (or „ ‟). Each pairs with the next quote of any kind,
# so a mixed pair ("Holy fire”) closes where it was typed and never re-pairs the quotes
# after it.
CURLY_DOUBLE = "\u201c\u201d\u201e\u201f"
_CURLY_DOUBLE = re.compile(f"[{CURLY_DOUBLE}]")
_OPEN_SINGLE = "\u2018"
_CLOSE_SINGLE = "\u2019"
_SINGLE_ENDS = " \t\r\n[](),"  # what may follow a closing ’ that ends a quoted phrase


def straighten_quotes(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` with curly quotes made straight, one character for one (positions in
    error messages stay valid), and where it changed something.

    Single curly quotes are quotes only as a pair around words: ‘ at the start of a
    word and the next ’ that ends a word (``‘heart attack’[tiab]``); a ’ inside a word
    is an apostrophe (``Crohn’s``) and stays.
    """
    if text.isascii():
        return text, ()
    chars = list(text)
    changed = [m.start() for m in _CURLY_DOUBLE.finditer(text)]
    for at in changed:
        chars[at] = '"'
    start = 0
    while (open_at := text.find(_OPEN_SINGLE, start)) >= 0:
        start = open_at + 1
        if open_at > 0 and text[open_at - 1] not in " \t\r\n(":
            continue
        close = _closing_single(text, open_at + 1)
        if close is None:
            continue
        chars[open_at] = chars[close] = '"'
        changed += [open_at, close]
        start = close + 1
    if not changed:
        return text, ()
    return "".join(chars), tuple(sorted(changed))


def _closing_single(text: str, start: int) -> int | None:
    """The first ’ from ``start`` that ends a word (before a quote-closing character)."""
    at = start
    while (close := text.find(_CLOSE_SINGLE, at)) >= 0:
        if close + 1 == len(text) or text[close + 1] in _SINGLE_ENDS:
            return close
        if text[close + 1] == _OPEN_SINGLE:
            return None
        at = close + 1
    return None
