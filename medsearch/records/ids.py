"""PMIDs and the keys built from them: the one PMID rule and the sentence ids.

Every key built from a PMID (the store's rows, tantivy's and Faiss's ids) must fit a
signed 64-bit integer; the rules for reading a PMID and for making a sentence key live
together so the bound on one follows from the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sentence:
    """An abstract sentence, keyed by ``sentence_id = pmid * 1000 + position``.

    The arithmetic key lets a sentence vector find its article without a lookup table and
    stays unique for abstracts of up to 1,000 sentences (PubMed's longest are ~100).
    """

    pmid: int
    position: int
    text: str
    label: str | None = None

    @property
    def sentence_id(self) -> int:
        return sentence_id(self.pmid, self.position)


SENTENCES_PER_ARTICLE = 1000


def sentence_id(pmid: int, position: int) -> int:
    return pmid * SENTENCES_PER_ARTICLE + position


def split_sentence_id(sid: int) -> tuple[int, int]:
    return divmod(sid, SENTENCES_PER_ARTICLE)


MAX_PMID = (2**63 - SENTENCES_PER_ARTICLE) // SENTENCES_PER_ARTICLE
"""The largest PMID medsearch keeps (NCBI's have eight digits). Every key built from a
PMID must fit a signed 64-bit integer (SQLite's INTEGER, tantivy's and Faiss's ids), and
the largest of them is a sentence id, ``pmid * 1000 + position``: so 2^63 / 1000, not
2^63, is the bound."""


def pmid_from(text: str | None) -> int | None:
    """``text`` as a PMID, or None when it is not one.

    The one rule for every way a PMID comes in (PubMed XML, the command line, the TUI),
    so what ingest stores is what ``show`` accepts: ASCII digits only (``str.isdigit``
    also takes ``²`` and other scripts' digits, and ``int`` reads ``١٢٣`` as 123), at
    least 1 (0 names no article) and at most :data:`MAX_PMID`. Surrounding white space
    is allowed, as XML text and typed input carry it.
    """
    if text is None:
        return None
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()):
        return None
    digits = digits.lstrip("0")
    if not digits or len(digits) > len(str(MAX_PMID)):  # int() of a huge string is slow
        return None
    value = int(digits)
    return value if value <= MAX_PMID else None
