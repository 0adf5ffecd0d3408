"""The records that flow through medsearch: XML -> records -> store -> indexes -> searcher.

The bottom layer, one import for every layer above: ``from medsearch.records import
Article, Filters, Hit``. What each holds lives in its own module:

- :mod:`~medsearch.records.article`: a PubMed record and its parts (authors, MeSH,
  dates, references, notices), with its dict round trip;
- :mod:`~medsearch.records.ids`: the PMID rule and the sentence keys built from PMIDs;
- :mod:`~medsearch.records.hits`: a ranked hit and its ``--json`` form;
- :mod:`~medsearch.records.filters`: the restrictions every retriever applies alike.
"""

from __future__ import annotations

from medsearch.records.article import (
    MONTHS,
    AbstractSection,
    Article,
    Author,
    Correction,
    Deletion,
    Grant,
    MeshHeading,
    Notice,
    PubDate,
    Qualifier,
    Reference,
)
from medsearch.records.filters import Filters
from medsearch.records.hits import Evidence, Hit, SentenceMatch
from medsearch.records.ids import (
    MAX_PMID,
    SENTENCES_PER_ARTICLE,
    Sentence,
    pmid_from,
    sentence_id,
    split_sentence_id,
)

__all__ = [
    "MAX_PMID",
    "MONTHS",
    "SENTENCES_PER_ARTICLE",
    "AbstractSection",
    "Article",
    "Author",
    "Correction",
    "Deletion",
    "Evidence",
    "Filters",
    "Grant",
    "Hit",
    "MeshHeading",
    "Notice",
    "PubDate",
    "Qualifier",
    "Reference",
    "Sentence",
    "SentenceMatch",
    "pmid_from",
    "sentence_id",
    "split_sentence_id",
]
