"""Nearest neighbours: similar articles (by stored or freshly encoded article vectors)
and similar abstract sentences.

The commands and the TUI call these directly with their searcher; they read only the
searcher's resources (store, vectors, encoders), never its search pipeline. Text
arrives as typed or from argv: bytes that were not UTF-8 are repaired here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from medsearch.errors import UsageError
from medsearch.query.normalize import repair_undecodable
from medsearch.records import Filters, Sentence, SentenceMatch, sentence_id, split_sentence_id
from medsearch.retrieval.results import Candidate, SearchResult, make_hits

if TYPE_CHECKING:
    from medsearch.retrieval.resources import Resources


def similar(
    searcher: Resources,
    pmid: int,
    *,
    k: int = 10,
    filters: Filters | None = None,
    skip_duplicates: bool = True,
) -> SearchResult:
    """Nearest neighbours of a stored article's vector (itself and same-title copies out)."""
    source = searcher.store.get(pmid)
    dense = searcher.dense_side("similar articles")
    vector = dense.article_vector(pmid)
    return _neighbours(
        searcher,
        vector,
        k,
        filters,
        exclude=frozenset({pmid}),
        pmid=pmid,
        same_title=source.title if skip_duplicates else None,
    )


def similar_text(
    searcher: Resources, title: str, abstract: str = "", *, k: int = 10
) -> SearchResult:
    title, abstract = repair_undecodable(title), repair_undecodable(abstract)
    if not (title.strip() or abstract.strip()):
        raise UsageError("give a title and/or an abstract to find similar articles")
    dense = searcher.dense_side("similar articles")
    tokens, limit = dense.encoder.article_tokens(title, abstract), dense.encoder.article_max_length
    if tokens > limit:
        raise UsageError(
            f"the text is {tokens} tokens and the {dense.encoder.profile.name} article encoder"
            f" reads {limit}; shorten it (the title and the start of the abstract are enough)"
        )
    vector = dense.encoder.encode_articles([(title, abstract)])
    return _neighbours(searcher, vector, k, None, details=(("text", f"{title}\n{abstract}"),))


def _neighbours(
    searcher: Resources,
    vector: np.ndarray,
    k: int,
    filters: Filters | None,
    *,
    exclude: frozenset[int] = frozenset(),
    pmid: int | None = None,
    details: tuple[tuple[str, Any], ...] = (),
    same_title: str | None = None,
) -> SearchResult:
    dense = searcher.dense_side("similar articles")
    allowed, accept = searcher.dense_filter(filters or Filters())
    pairs = dense.search_vector(vector, k * 2 + 5, allowed=allowed, accept=accept, exclude=exclude)
    records = searcher.store.get_many([p for p, _ in pairs])
    title_key = same_title.casefold().strip() if same_title else None
    cands = [
        Candidate(pmid=p, score=s, sources=("dense",))
        for p, s in pairs
        if p in records and (title_key is None or records[p].title.casefold().strip() != title_key)
    ][:k]
    return SearchResult(
        hits=tuple(make_hits(cands, records)),
        mode="dense",
        total=len(cands),
        pmid=pmid,
        details=details,
        filters=filters or Filters(),
    )


def sentences(searcher: Resources, text: str, *, k: int = 10) -> SearchResult:
    """Nearest abstract sentences, each with its neighbours for context."""
    from medsearch.sentences import article_sentences

    text = repair_undecodable(text)
    dense = searcher.dense_side("sentence search")
    tokens, limit = dense.encoder.query_tokens(text), dense.encoder.query_max_length
    if tokens > limit:
        raise UsageError(
            f"the text is {tokens} tokens and sentence search reads {limit}; give one"
            " sentence (for a paragraph, `medsearch cite` searches sentence by sentence)"
        )
    split: dict[int, list[Sentence]] = {}

    def sentence_texts(ids: Sequence[int]) -> dict[int, str]:
        """Text of each sentence id: the stored abstract, split by the shared splitter."""
        wanted = sorted({split_sentence_id(i)[0] for i in ids} - split.keys())
        abstracts = searcher.store.abstracts_many(wanted)
        for pmid in wanted:
            split[pmid] = article_sentences(abstracts[pmid]) if pmid in abstracts else []
        out = {}
        for i in ids:
            pmid, position = split_sentence_id(i)
            if position < len(split[pmid]):
                out[i] = split[pmid][position].text
        return out

    found = dense.search_sentences(text, k, sentence_texts)
    sentence_texts([sentence_id(p, n) for p, n, _ in found])  # exact hits are not split yet
    records = searcher.store.get_many(sorted({p for p, _, _ in found}))  # whole, to show
    cands: list[Candidate] = []
    for pmid, position, score in found:
        sents = split.get(pmid, [])
        if pmid not in records or position >= len(sents):
            continue
        sent = sents[position]
        before = sents[position - 1].text if position > 0 else ""
        after = sents[position + 1].text if position + 1 < len(sents) else ""
        cands.append(
            Candidate(
                pmid=pmid,
                score=score,
                sources=("dense",),
                sentence=SentenceMatch(sent.text, sent.label, sent.sentence_id, before, after),
            )
        )
    return SearchResult(
        hits=tuple(make_hits(cands, records)),
        mode="sentences",
        total=len(cands),
        query=text,
    )
