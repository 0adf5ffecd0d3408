"""Text from records, queries and files made safe for where medsearch writes it.

A PubMed record, a query or a reference list is text someone else wrote. Written as it
is it can break a format or act in the reader's program, so each writer passes it
through the one function here for its target:

- :func:`xml_text`: XML 1.0 forbids most C0 controls, surrogates and U+FFFE/U+FFFF; one
  such character in a title made a watch's Atom feed unreadable until the entry aged
  out. They become U+FFFD (the replacement character), so the reader sees where.
- :func:`terminal_text`: ESC, BEL, backspace and the other C0/C1 controls move the
  cursor, rewrite the screen or set the window title when printed raw; they are shown
  as ``^[``-style caret notation (tab stays, a line break becomes a space when the text
  is one line).
- :func:`csv_cell`: a cell a spreadsheet would run as a formula (starting ``=``, ``+``,
  ``-``, ``@``, tab or carriage return) gets a leading ``'``, as OWASP's "CSV Injection"
  advises.
- :func:`markdown_code`: an inline code span whose fence is longer than any run of
  backticks in the text, so a backtick in a query cannot close it.
"""

from __future__ import annotations

import re

_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids replaced by U+FFFD."""
    return _XML_FORBIDDEN.sub("\ufffd", text)


def _caret(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return " "
    if code < 0x20 or code == 0x7F:
        return "^" + chr(code ^ 0x40)
    return f"\\x{code:02x}"  # C1 controls (CSI 0x9b among them)


def terminal_text(text: str) -> str:
    """``text`` as one line a terminal shows and does not obey: controls made visible
    (``^[`` for ESC, ``^G`` for BEL, ``^H`` for backspace, ``\\x9b`` for a C1 control),
    a line break a space; tabs stay."""
    return _CONTROLS.sub(_caret, text)


def csv_cell(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs as a formula (OWASP: prefix ``'``)."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def markdown_code(text: str) -> str:
    """``text`` as one Markdown inline code span that nothing in it can close (and with
    its controls made visible)."""
    text = terminal_text(text)
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"
