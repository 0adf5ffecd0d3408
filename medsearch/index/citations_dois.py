"""Resolving queued DOI-only references in batches, after an ingest, through the
lexical index's ``[aid]`` field (see :mod:`medsearch.store.ref_dois` for the design).

``[aid]`` holds each article's casefolded DOIs, PMCIDs and PIIs as exact terms, so a
batch of DOIs is one term-set query, read as PMIDs from the fast field; each PMID is
mapped back to its DOI by a primary-key read of ``articles``. No index on
``articles.doi`` is needed (~2 GB at 40.9M articles).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from medsearch.store import ref_dois
from medsearch.store.refs import add_edges
from medsearch.store.transactions import transaction

if TYPE_CHECKING:
    from medsearch.index.lexical.index import LexicalIndex

BATCH = 1_000
"""DOIs per lookup and per transaction: one term-set query of 1,000 terms."""


def lexical_lookup(index: LexicalIndex, conn: sqlite3.Connection) -> ref_dois.DoiLookup:
    """DOIs looked up as ``doi[aid]`` terms in ``index``, mapped back by ``articles.doi``."""
    from medsearch.query.nodes import ParsedQuery, Tagged, Term

    def lookup(dois: Sequence[str]) -> dict[str, int]:
        if not dois:
            return {}
        # one term-set query over the field's exact terms (the form an exploded MeSH
        # heading takes): a single walk of the term dictionary, and no query node per DOI
        node = Tagged("aid", Term(dois[0]), keys=tuple(dois))
        # a DOI shared by a few records (an erratum's) must not cut the set short
        pmids = index.set_pmids(ParsedQuery(text="", node=node), 4 * len(dois) + 16)
        wanted = set(dois)
        out: dict[str, int] = {}
        listed = [int(p) for p in pmids]
        for i in range(0, len(listed), ref_dois.CHUNK):
            chunk = tuple(listed[i : i + ref_dois.CHUNK])
            marks = ",".join("?" * len(chunk))
            for pmid, doi in conn.execute(
                f"SELECT pmid, doi FROM articles WHERE pmid IN ({marks}) AND doi IS NOT NULL"
                " ORDER BY pmid",
                chunk,
            ):
                key = ref_dois.normal_doi(doi)
                if key in wanted:
                    out.setdefault(key, pmid)
        return out

    return lookup


def resolve(
    conn: sqlite3.Connection, lookup: ref_dois.DoiLookup, batch: int = BATCH
) -> tuple[int, int]:
    """Resolve every queued DOI-only reference, a batch per transaction (a killed run
    leaves the rest queued); returns (references read, edges added)."""
    read = added = 0
    while True:
        with transaction(conn):
            taken, edges = ref_dois.resolve_batch(conn, lookup, batch)
            if edges:
                added += add_edges(conn, *ref_dois.as_arrays(edges), from_list=True)
        read += taken
        if taken < batch:
            return read, added
