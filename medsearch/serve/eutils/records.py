"""``efetch`` and ``esummary``: stored records as NCBI formats them.

efetch: ``PubmedArticleSet`` XML rebuilt from the store (:mod:`.pubmed_xml`), MEDLINE
text as ``export nbib`` writes it, PubMed's abstract text display, and ``uilist``.
esummary: the version 1.0 ``DocSum`` (the default), the version 2.0
``DocumentSummary`` and the JSON form of version 2.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from medsearch.errors import UsageError
from medsearch.records import Article, PubDate
from medsearch.serve.eutils.xmldoc import Element, add, build, json_bytes, json_header
from medsearch.serve.params import Params, pmids_of

MAX_FETCH = 10_000
"""Records one efetch or esummary returns at most (NCBI's limit for efetch)."""


def requested_ids(params: Params, from_history: list[int] | None) -> list[int]:
    """``id=`` or the History set, sliced by ``retstart``/``retmax`` (History only:
    NCBI's default there is 20 records)."""
    if from_history is not None:
        retstart = params.integer("retstart", 0, 0, 1_000_000_000)
        retmax = params.integer("retmax", 20, 0, MAX_FETCH)
        return from_history[retstart : retstart + retmax]
    text = params.text("id")
    if not text or not text.strip():
        raise UsageError("Empty id list - nothing todo")
    ids = pmids_of(text)
    if len(ids) > MAX_FETCH:
        raise UsageError(f"at most {MAX_FETCH:,} ids per request, not {len(ids):,}")
    return ids


def ordered(found: dict[int, Article], ids: Sequence[int]) -> list[Article]:
    """The stored ones among ``ids``, in the asked order, each once (NCBI leaves out
    the ids it does not have)."""
    return [found[p] for p in dict.fromkeys(ids) if p in found]


# -- efetch --------------------------------------------------------------------------------


def abstract_text(articles: Sequence[Article]) -> str:
    """PubMed's "Abstract" text display: numbered records, citation, title, authors,
    affiliations, abstract, identifiers."""
    blocks = []
    for n, a in enumerate(articles, 1):
        lines = [f"{n}. {a.journal_citation}", "", a.title, ""]
        if a.authors:
            lines += [", ".join(author.display for author in a.authors) + ".", ""]
        affiliations = list(dict.fromkeys(x for author in a.authors for x in author.affiliations))
        if affiliations:
            lines += ["Author information:"]
            lines += [f"({i}){x}" for i, x in enumerate(affiliations, 1)] + [""]
        for section in a.abstract:
            lines += [f"{section.label}: {section.text}" if section.label else section.text, ""]
        ids = [f"DOI: {a.doi}"] if a.doi else []
        if a.pmcid:
            ids.append(f"PMCID: {a.pmcid}")
        ids.append(f"PMID: {a.pmid}")
        lines += ids
        blocks.append("\n".join(lines))
    return "\n\n\n".join(blocks) + "\n"


def efetch_body(articles: Sequence[Article], params: Params) -> tuple[bytes, str]:
    """The body and media type for ``rettype``/``retmode``, NCBI's combinations."""
    from medsearch.export import to_nbib
    from medsearch.serve.eutils.pubmed_xml import article_set

    rettype = (params.text("rettype") or "").lower()
    retmode = (params.text("retmode") or "").lower()
    if (rettype in ("", "full", "xml") and retmode in ("", "xml")) or (
        rettype in ("abstract", "medline") and retmode == "xml"
    ):
        return article_set(articles), "text/xml"  # NCBI answers XML for any of these
    if rettype == "medline" and retmode in ("", "text"):
        return to_nbib(articles).encode(), "text/plain"
    if rettype == "abstract" and retmode in ("", "text"):
        return abstract_text(articles).encode(), "text/plain"
    if rettype == "uilist":
        if retmode == "xml":
            return build_uilist(articles), "text/xml"
        return "".join(f"{a.pmid}\n" for a in articles).encode(), "text/plain"
    raise UsageError(
        f"rettype {rettype or '(none)'} with retmode {retmode or '(none)'} is not offered"
    )


def build_uilist(articles: Sequence[Article]) -> bytes:
    from lxml import etree

    root = etree.Element("IdList")
    for a in articles:
        add(root, "Id", a.pmid)
    return b'<?xml version="1.0" encoding="UTF-8" ?>\n' + etree.tostring(root, pretty_print=True)


# -- esummary ------------------------------------------------------------------------------


def _date(date: PubDate) -> str:
    """``2020 Mar 5`` as esummary writes PubDate."""
    return str(date)


def _sort_date(date: PubDate) -> str:
    year = date.year or 0
    return f"{year:04d}/{date.month or 1:02d}/{date.day or 1:02d} 00:00"


def _pubtypes(a: Article) -> list[str]:
    return list(a.publication_types)


def _ids(a: Article) -> list[tuple[str, str]]:
    pairs = [("pubmed", str(a.pmid))]
    pairs += [(kind, value) for kind, value in a.article_ids if kind != "pubmed"]
    return pairs


def _elocation(a: Article) -> str:
    return f"doi: {a.doi}" if a.doi else ""


def summary_v1(articles: Sequence[Article]) -> bytes:
    """Version 1.0: ``DocSum`` of typed ``Item``s (esummary-v1.dtd)."""

    def item(parent: Element, name: str, kind: str, text: object = None) -> Element:
        return add(parent, "Item", text, Name=name, Type=kind)

    def fill(root: Element) -> None:
        for a in articles:
            doc = add(root, "DocSum")
            add(doc, "Id", a.pmid)
            item(doc, "PubDate", "Date", _date(a.pub_date))
            item(doc, "EPubDate", "Date", _date(a.electronic_date) if a.electronic_date else "")
            item(doc, "Source", "String", a.journal_abbrev or a.journal)
            authors = item(doc, "AuthorList", "List")
            for author in a.authors:
                item(authors, "Author", "String", author.display)
            item(doc, "LastAuthor", "String", a.authors[-1].display if a.authors else "")
            item(doc, "Title", "String", a.title)
            item(doc, "Volume", "String", a.volume or "")
            item(doc, "Issue", "String", a.issue or "")
            item(doc, "Pages", "String", a.pages or "")
            langs = item(doc, "LangList", "List")
            for lang in a.languages:
                item(langs, "Lang", "String", lang)
            item(doc, "ISSN", "String", a.issn or "")
            types = item(doc, "PubTypeList", "List")
            for kind in _pubtypes(a):
                item(types, "PubType", "String", kind)
            item(doc, "RecordStatus", "String", "PubMed - indexed for MEDLINE")
            ids = item(doc, "ArticleIds", "List")
            for kind, value in _ids(a):
                item(ids, kind, "String", value)
            if a.doi:
                item(doc, "DOI", "String", a.doi)
            item(doc, "FullJournalName", "String", a.journal)
            item(doc, "ELocationID", "String", _elocation(a))
            item(doc, "SO", "String", a.journal_citation.split(". ", 1)[-1].rstrip("."))

    return build("eSummaryResult", fill)


def _summary_fields(a: Article) -> dict[str, Any]:
    """Version 2.0 fields, in NCBI's order, as plain data (the JSON form's values)."""
    return {
        "uid": str(a.pmid),
        "pubdate": _date(a.pub_date),
        "epubdate": _date(a.electronic_date) if a.electronic_date else "",
        "source": a.journal_abbrev or a.journal,
        "authors": [
            {"name": author.display, "authtype": "Author", "clusterid": ""} for author in a.authors
        ],
        "lastauthor": a.authors[-1].display if a.authors else "",
        "title": a.title,
        "sorttitle": a.title.lower(),
        "volume": a.volume or "",
        "issue": a.issue or "",
        "pages": a.pages or "",
        "lang": list(a.languages),
        "nlmuniqueid": "",
        "issn": a.issn or "",
        "essn": "",
        "pubtype": _pubtypes(a),
        "recordstatus": "PubMed - indexed for MEDLINE",
        "pubstatus": "4",
        "articleids": [{"idtype": kind, "idtypen": 1, "value": value} for kind, value in _ids(a)],
        "attributes": ["Has Abstract"] if a.abstract else [],
        "fulljournalname": a.journal,
        "elocationid": _elocation(a),
        "doctype": "chapter" if a.kind == "book" else "citation",
        "sortpubdate": _sort_date(a.pub_date),
        "sortfirstauthor": a.authors[0].display if a.authors else "",
    }


_LISTS = {
    "authors": ("Authors", "Author"),
    "lang": ("Lang", "string"),
    "pubtype": ("PubType", "flag"),
}
_TAGS = {
    "pubdate": "PubDate",
    "epubdate": "EPubDate",
    "source": "Source",
    "lastauthor": "LastAuthor",
    "title": "Title",
    "sorttitle": "SortTitle",
    "volume": "Volume",
    "issue": "Issue",
    "pages": "Pages",
    "nlmuniqueid": "NlmUniqueID",
    "issn": "ISSN",
    "essn": "ESSN",
    "recordstatus": "RecordStatus",
    "pubstatus": "PubStatus",
    "fulljournalname": "FullJournalName",
    "elocationid": "ELocationID",
    "doctype": "DocType",
    "sortpubdate": "SortPubDate",
    "sortfirstauthor": "SortFirstAuthor",
}


def summary_v2(articles: Sequence[Article]) -> bytes:
    """Version 2.0: ``DocumentSummarySet`` of ``DocumentSummary`` (esummary_pubmed.dtd)."""

    def fill(root: Element) -> None:
        docs = add(root, "DocumentSummarySet", status="OK")
        for a in articles:
            fields = _summary_fields(a)
            doc = add(docs, "DocumentSummary", uid=fields.pop("uid"))
            for key, value in fields.items():
                if key in _LISTS:
                    outer, inner = _LISTS[key]
                    holder = add(doc, outer)
                    for entry in value:
                        if isinstance(entry, dict):
                            author = add(holder, inner)
                            add(author, "Name", entry["name"])
                            add(author, "AuthType", entry["authtype"])
                            add(author, "ClusterID", entry["clusterid"])
                        else:
                            add(holder, inner, entry)
                elif key == "articleids":
                    holder = add(doc, "ArticleIds")
                    for entry in value:
                        one = add(holder, "ArticleId")
                        add(one, "IdType", entry["idtype"])
                        add(one, "IdTypeN", entry["idtypen"])
                        add(one, "Value", entry["value"])
                elif key == "attributes":
                    holder = add(doc, "Attributes")
                    for entry in value:
                        add(holder, "flag", entry)
                else:
                    add(doc, _TAGS[key], value)

    return build("eSummaryResult", fill, doctype="eSummaryResult2")


def summary_json(articles: Sequence[Article]) -> bytes:
    result: dict[str, Any] = {"uids": [str(a.pmid) for a in articles]}
    for a in articles:
        result[str(a.pmid)] = _summary_fields(a)
    return json_bytes({"header": json_header("esummary"), "result": result})
