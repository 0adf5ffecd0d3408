"""``esearch`` and ``espell`` (the History server they feed is :mod:`.history`).

esearch is PubMed's Boolean set, so it runs medsearch's lexical search (no encoder, no
reranker): ``Count`` is the set's size as ``search --count`` gives it, ``IdList`` a
slice of it in the asked order, and ``QueryTranslation``/``TranslationStack`` come from
medsearch's parse of the term (after MeSH mapping where MeSH is installed).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from medsearch.errors import QuerySyntaxError, UsageError
from medsearch.query.nodes import (
    And,
    Node,
    Not,
    Or,
    ParsedQuery,
    Phrase,
    Prefix,
    Tagged,
    Term,
    YearRange,
)
from medsearch.query.parser import parse_query
from medsearch.query.printer import format_node, format_query
from medsearch.serve.eutils.history import History
from medsearch.serve.eutils.xmldoc import Element, add, build, json_bytes, json_header
from medsearch.serve.params import Params
from medsearch.serve.state import Opened

MAX_IDS = 10_000
"""The deepest an esearch reaches, as at NCBI (retstart + retmax beyond 9,999 is refused
there; here the searcher's deepest list is 10,000)."""

SORTS = {
    "relevance": "relevance",
    "most recent": "date",
    "most+recent": "date",
    "date": "date",
    "pub_date": "pubdate",
    "pub date": "pubdate",
    "pub+date": "pubdate",
    "author": "author",
    "first+author": "author",
    "first author": "author",
    "journalname": "journal",
    "journal": "journal",
}
DEFAULT_SORT = "date"
"""NCBI's esearch lists PubMed newest first unless ``sort`` says otherwise."""

FIELD_NAMES = {
    "ti": "Title",
    "ab": "Abstract",
    "tiab": "Title/Abstract",
    "mh": "MeSH Terms",
    "majr": "MeSH Major Topic",
    "sh": "MeSH Subheading",
    "kw": "Other Term",
    "au": "Author",
    "1au": "Author - First",
    "lastau": "Author - Last",
    "fau": "Author - Full",
    "ad": "Affiliation",
    "gr": "Grant Number",
    "pt": "Publication Type",
    "ta": "Journal",
    "la": "Language",
    "aid": "Article Identifier",
    "sb": "Filter",
    "nm": "Supplementary Concept",
    "dp": "Publication Date",
    "pmid": "UID",
    "all": "All Fields",
}
STACK_COUNTS = 20
"""Terms of a translation stack counted one by one (each is a lexical count)."""


@dataclass(frozen=True, slots=True)
class TermSet:
    term: str
    field: str
    count: int
    explode: bool


Stack = list[TermSet | str]


def _date_filter(params: Params) -> tuple[str | None, list[str]]:
    """``mindate``/``maxdate`` or ``reldate`` as a ``[dp]`` range, and what was read
    differently: only the publication date is kept, so ``edat``/``mdat`` search it."""
    notes: list[str] = []
    datetype = (params.text("datetype") or "pdat").lower()
    low, high = params.text("mindate"), params.text("maxdate")
    reldate = params.text("reldate")
    if reldate:
        try:
            days = int(reldate)
        except ValueError:
            raise UsageError(f"reldate must be a number of days, not {reldate!r}") from None
        today = datetime.date.today()
        low = (today - datetime.timedelta(days=days)).strftime("%Y/%m/%d")
        high = today.strftime("%Y/%m/%d")
    if not low and not high:
        return None, notes
    if not (low and high):
        raise UsageError("mindate and maxdate must be given together")
    if datetype != "pdat":
        notes.append(
            f"datetype {datetype} searched as pdat: medsearch keeps the publication date only"
        )
    return f"{low.strip()}:{high.strip()}", notes


def _stack(node: Node | None, count: Any) -> Stack:
    """The tree in NCBI's postfix form: TermSets, then ``AND``/``OR``/``NOT`` and
    ``GROUP`` after a parenthesised part."""
    if node is None:
        return []
    if isinstance(node, And | Or):
        out: Stack = []
        op = "OR" if isinstance(node, Or) and not node.words else "AND"
        for i, child in enumerate(node.children):
            if isinstance(child, Not):
                out.extend(_stack(child.child, count))
                if i:
                    out.append("NOT")
                continue
            out.extend(_stack(child, count))
            if isinstance(child, And | Or) and len(child.children) > 1:
                out.append("GROUP")
            if i:
                out.append(op)
        return out
    if isinstance(node, Not):
        return [*_stack(node.child, count), "NOT"]
    if isinstance(node, Tagged):
        if isinstance(node.node, And | Or):
            return _stack(node.node, count)
        text = format_node(node)
        field = FIELD_NAMES.get(node.tag, node.tag)
        explode = node.tag in ("mh", "majr") and not node.noexp
        return [TermSet(text, field, count(text), explode)]
    if isinstance(node, YearRange):
        text = format_node(node)
        return [TermSet(text, "Publication Date", count(text), False)]
    assert isinstance(node, Term | Phrase | Prefix)
    text = f"{format_node(node)}[All Fields]"
    return [TermSet(text, "All Fields", count(format_node(node)), False)]


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    count: int
    retmax: int
    retstart: int
    ids: list[int]
    translation: str
    stack: Stack
    web_env: str | None
    query_key: int | None
    warnings: list[str]


@dataclass(frozen=True, slots=True)
class SetFound:
    """An esearch's set: its size, its ids in the asked order (as deep as asked), the
    translation run (None: as typed) and the notes."""

    count: int
    ids: list[int]
    translation: str | None
    parsed: ParsedQuery | None
    notes: list[str]


def find_set(state: Opened, query: str, depth: int, sort: str) -> SetFound:
    """The query as a Boolean set, counted by ``search --count``'s own call (the
    searcher's one plan: :meth:`~medsearch.retrieval.searcher.Searcher.plan`), so
    ``Count``, the translation and the notes are exactly the command's: plain words are
    the set holding every word, as PubMed ANDs them. The ids are then listed from that
    plan's counted set, ids only (no record is decoded, which is what keeps esearch
    fast); ``sort`` other than relevance orders the best :data:`MAX_IDS` by the store's
    sort fields."""
    from medsearch.records import Hit
    from medsearch.retrieval.query_text import truncated_note
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.sorting import sort_result

    searcher = state.searcher
    counted = searcher.search(query, k=1, snippets=False, count_only=True)
    assert counted.plan is not None, "a search's result carries its plan"
    notes = list(counted.notes)
    target = counted.plan.counted_set()
    found = searcher.lexical.search(
        target.parsed, k=max(depth, 1), count=False, syntax=target.syntax, snippets=0
    )
    if found.truncated and not any(n.startswith("truncation:") for n in notes):
        notes.append(truncated_note(found.truncated))
    ids = [hit.pmid for hit in found.hits]
    if sort != "relevance" and ids:
        hits = tuple(Hit(rank=i, pmid=p, score=0.0) for i, p in enumerate(ids, 1))
        ranked = SearchResult(hits=hits, mode="lexical", total=counted.total)
        result = sort_result(ranked, sort, depth, searcher.store, graph=state.graph)
        ids = [hit.pmid for hit in result.hits]
        notes.extend(result.notes)
    return SetFound(counted.total, ids, counted.translation or None, target.parsed, notes)


def esearch(state: Opened, history: History, params: Params) -> SearchAnswer:
    term = params.text("term") or ""
    if not term.strip():
        raise UsageError("Empty term and query_key - nothing todo")  # NCBI's words
    retstart = params.integer("retstart", 0, 0, MAX_IDS)
    retmax = params.integer("retmax", 20, 0, MAX_IDS)
    sort_name = (params.text("sort") or "").strip().lower()
    if sort_name and sort_name not in SORTS:
        raise UsageError(f"unknown sort {params.text('sort')!r}")
    sort = SORTS.get(sort_name, DEFAULT_SORT)
    use_history = (params.text("usehistory") or "").lower() == "y"
    dates, warnings = _date_filter(params)
    query = term if dates is None else f"({term}) AND {dates}[dp]"
    want = MAX_IDS if use_history else min(retstart + retmax, MAX_IDS)
    found = find_set(state, query, want if sort == "relevance" else MAX_IDS, sort)
    ids = found.ids[:want]
    warnings.extend(found.notes)
    parsed = found.parsed
    if found.translation is not None:
        try:
            parsed = parse_query(found.translation)
        except QuerySyntaxError:
            parsed = found.parsed
    translation = found.translation or (format_query(parsed) if parsed else query)
    budget = [STACK_COUNTS]
    lexical = state.searcher.lexical

    def count(text: str) -> int:
        if budget[0] <= 0:
            return 0
        budget[0] -= 1
        try:
            return lexical.search(text, k=1, snippets=0).total
        except QuerySyntaxError:
            return 0

    stack = _stack(parsed.node, count) if parsed is not None else []
    web_env = query_key = None
    if use_history:
        web_env, query_key = history.add(params.text("WebEnv"), ids)
        if found.count > len(ids):
            warnings.append(
                f"the History server keeps the first {len(ids):,} of {found.count:,} ids"
            )
    page = ids[retstart : retstart + retmax]
    return SearchAnswer(
        count=found.count,
        retmax=len(page),
        retstart=retstart,
        ids=page,
        translation=translation,
        stack=stack,
        web_env=web_env,
        query_key=query_key,
        warnings=warnings,
    )


def esearch_xml(answer: SearchAnswer) -> bytes:
    def fill(root: Element) -> None:
        add(root, "Count", answer.count)
        add(root, "RetMax", answer.retmax)
        add(root, "RetStart", answer.retstart)
        if answer.query_key is not None and answer.web_env is not None:
            add(root, "QueryKey", answer.query_key)
            add(root, "WebEnv", answer.web_env)
        id_list = add(root, "IdList")
        for pmid in answer.ids:
            add(id_list, "Id", pmid)
        add(root, "TranslationSet")
        if answer.stack:
            stack = add(root, "TranslationStack")
            for item in answer.stack:
                if isinstance(item, str):
                    add(stack, "OP", item)
                else:
                    term_set = add(stack, "TermSet")
                    add(term_set, "Term", item.term)
                    add(term_set, "Field", item.field)
                    add(term_set, "Count", item.count)
                    add(term_set, "Explode", "Y" if item.explode else "N")
        add(root, "QueryTranslation", answer.translation)
        if answer.warnings:
            warnings = add(root, "WarningList")
            for text in answer.warnings:
                add(warnings, "OutputMessage", text)

    return build("eSearchResult", fill)


def esearch_json(answer: SearchAnswer) -> bytes:
    result: dict[str, Any] = {
        "count": str(answer.count),
        "retmax": str(answer.retmax),
        "retstart": str(answer.retstart),
    }
    if answer.query_key is not None:
        result["querykey"] = str(answer.query_key)
        result["webenv"] = answer.web_env
    result["idlist"] = [str(p) for p in answer.ids]
    result["translationset"] = []
    result["translationstack"] = [
        item
        if isinstance(item, str)
        else {
            "term": item.term,
            "field": item.field,
            "count": str(item.count),
            "explode": "Y" if item.explode else "N",
        }
        for item in answer.stack
    ]
    result["querytranslation"] = answer.translation
    if answer.warnings:
        result["warninglist"] = {
            "phrasesignored": [],
            "quotedphrasesnotfound": [],
            "outputmessages": answer.warnings,
        }
    return json_bytes({"header": json_header("esearch"), "esearchresult": result})


def espell_xml(state: Opened, params: Params) -> bytes:
    """``espell``: medsearch's did-you-mean over this corpus's words."""
    from medsearch.index.lexical.spelling import did_you_mean

    term = params.text("term") or ""
    suggestion = did_you_mean(state.searcher.lexical, term) if term.strip() else None
    corrected = suggestion.query if suggestion is not None else ""
    fixes = dict(suggestion.words) if suggestion is not None else {}

    def fill(root: Element) -> None:
        add(root, "Database", "pubmed")
        add(root, "Query", term)
        add(root, "CorrectedQuery", corrected)
        spelled = add(root, "SpelledQuery")
        for word in term.split():
            if word in fixes:
                add(spelled, "Replaced", fixes[word])
            else:
                add(spelled, "Original", word)
        add(root, "ERROR")

    return build("eSpellResult", fill)
