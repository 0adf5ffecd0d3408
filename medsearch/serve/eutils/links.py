"""``elink``, ``epost``, ``ecitmatch`` and ``einfo`` for PubMed.

elink's three PubMed-to-PubMed links come from medsearch's own data: ``pubmed_pubmed``
from similar articles (the article vectors; without vectors, the citation graph's
co-citation and coupling), ``pubmed_pubmed_refs`` from the record's reference list and
``pubmed_pubmed_citedin`` from the citation graph: "cited in this corpus", not NCBI's
count of the world's citations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medsearch.errors import MedsearchError, UsageError
from medsearch.records import pmid_from
from medsearch.serve.eutils.history import History
from medsearch.serve.eutils.search import FIELD_NAMES
from medsearch.serve.eutils.xmldoc import Element, add, build, json_bytes, json_header
from medsearch.serve.params import Params, pmids_of
from medsearch.serve.state import Opened

LINKS = {
    "pubmed_pubmed": ("Similar articles", "Similar articles, by medsearch's article vectors"),
    "pubmed_pubmed_refs": ("References", "Articles this one cites (its reference list)"),
    "pubmed_pubmed_citedin": ("Cited by", "Articles in this corpus that cite this one"),
}
SIMILAR_LINKS = 100
"""How many similar articles ``pubmed_pubmed`` lists per PMID (NCBI lists up to a few
hundred, scored)."""


@dataclass(frozen=True, slots=True)
class LinkSet:
    ids: list[int]
    links: list[tuple[str, list[tuple[int, int]]]]
    """(linkname, [(pmid, score)]) for each link with at least one entry."""
    web_env: str | None = None
    query_keys: tuple[tuple[str, int], ...] = ()


def _similar(state: Opened, pmid: int) -> list[tuple[int, int]]:
    from medsearch.retrieval import neighbours
    from medsearch.retrieval.citations import related

    try:
        if state.searcher.has_vectors:
            result = neighbours.similar(state.searcher, pmid, k=SIMILAR_LINKS)
            return [(h.pmid, max(0, round(h.score * 1000))) for h in result.hits]
    except MedsearchError:
        pass  # not stored with a vector: the citation graph still relates it
    result = related(state.searcher.store, state.graph, pmid, SIMILAR_LINKS)
    return [(h.pmid, max(0, round(h.score * 1000))) for h in result.hits]


def _links(state: Opened, name: str, pmid: int) -> list[tuple[int, int]]:
    if name == "pubmed_pubmed":
        return _similar(state, pmid)
    if name == "pubmed_pubmed_refs":
        edges = state.graph.references(pmid)[0]
        record = state.searcher.store.get_many([pmid]).get(pmid)
        listed = list(record.cited_pmids) if record is not None else []
        ordered = list(dict.fromkeys([*listed, *(int(p) for p in edges)]))
        return [(p, 0) for p in ordered]
    return [(int(p), 0) for p in sorted(state.graph.cited_by(pmid), reverse=True)]


def elink(state: Opened, history: History, params: Params) -> list[LinkSet]:
    dbfrom = (params.text("dbfrom") or "pubmed").lower()
    db = (params.text("db") or "pubmed").lower()
    if dbfrom != "pubmed" or db != "pubmed":
        raise UsageError(f"only pubmed to pubmed links are offered here, not {dbfrom} to {db}")
    cmd = (params.text("cmd") or "neighbor").lower()
    if cmd not in ("neighbor", "neighbor_score", "neighbor_history"):
        raise UsageError(f"cmd {cmd} is not offered (neighbor, neighbor_score, neighbor_history)")
    names = [n for n in (params.text("linkname") or "").split(",") if n]
    for name in names:
        if name not in LINKS:
            raise UsageError(f"linkname {name} is not offered ({', '.join(LINKS)})")
    groups = [pmids_of(v) for v in params.all("id") if v.strip()]
    if not groups:
        web = params.text("WebEnv")
        if web:
            groups = [history.get(web, params.integer("query_key", 1, 1, 1_000_000))]
    if not groups:
        raise UsageError("Empty id list - nothing todo")
    out = []
    for ids in groups:
        links: list[tuple[str, list[tuple[int, int]]]] = []
        for name in names or list(LINKS):
            found: dict[int, int] = {}
            for pmid in ids:
                for linked, score in _links(state, name, pmid):
                    if linked not in ids:
                        found.setdefault(linked, score)
            if found:
                links.append((name, list(found.items())))
        if cmd == "neighbor_history":
            web_env: str | None = params.text("WebEnv")
            keys = []
            for name, entries in links:
                web_env, key = history.add(web_env, [p for p, _ in entries])
                keys.append((name, key))
            out.append(LinkSet(ids, links, web_env, tuple(keys)))
        else:
            out.append(LinkSet(ids, links))
    return out


def elink_xml(sets: list[LinkSet], scores: bool) -> bytes:
    def fill(root: Element) -> None:
        for one in sets:
            link_set = add(root, "LinkSet")
            add(link_set, "DbFrom", "pubmed")
            id_list = add(link_set, "IdList")
            for pmid in one.ids:
                add(id_list, "Id", pmid)
            if one.web_env is not None:
                for name, key in one.query_keys:
                    hist = add(link_set, "LinkSetDbHistory")
                    add(hist, "DbTo", "pubmed")
                    add(hist, "LinkName", name)
                    add(hist, "QueryKey", key)
                add(link_set, "WebEnv", one.web_env)
                continue
            for name, entries in one.links:
                db = add(link_set, "LinkSetDb")
                add(db, "DbTo", "pubmed")
                add(db, "LinkName", name)
                for pmid, score in entries:
                    link = add(db, "Link")
                    add(link, "Id", pmid)
                    if scores:
                        add(link, "Score", score)

    return build("eLinkResult", fill)


def elink_json(sets: list[LinkSet], scores: bool) -> bytes:
    out: list[dict[str, Any]] = []
    for one in sets:
        entry: dict[str, Any] = {"dbfrom": "pubmed", "ids": [str(p) for p in one.ids]}
        if one.web_env is not None:
            entry["linksetdbhistories"] = [
                {"dbto": "pubmed", "linkname": name, "querykey": str(key)}
                for name, key in one.query_keys
            ]
            entry["webenv"] = one.web_env
        else:
            entry["linksetdbs"] = [
                {
                    "dbto": "pubmed",
                    "linkname": name,
                    "links": [{"id": str(p), "score": s} if scores else str(p) for p, s in entries],
                }
                for name, entries in one.links
            ]
        out.append(entry)
    return json_bytes({"header": json_header("elink"), "linksets": out})


def epost_xml(state: Opened, history: History, params: Params) -> bytes:
    """``epost``: stored ids under a WebEnv/query_key; the others as ``InvalidIdList``."""
    text = params.text("id") or ""
    values = [v for v in text.replace(",", " ").split() if v]
    if not values:
        raise UsageError("Empty id list - nothing todo")
    ids = [p for v in values if (p := pmid_from(v)) is not None]
    stored = state.searcher.store.get_many(ids)
    kept = [p for p in dict.fromkeys(ids) if p in stored]
    invalid = [v for v in values if (p := pmid_from(v)) is None or p not in stored]
    web_env, key = history.add(params.text("WebEnv"), kept)

    def fill(root: Element) -> None:
        if invalid:
            bad = add(root, "InvalidIdList")
            for value in invalid:
                add(bad, "Id", value)
        add(root, "QueryKey", key)
        add(root, "WebEnv", web_env)

    return build("ePostResult", fill)


def ecitmatch_text(state: Opened, params: Params) -> str:
    """``ecitmatch``: ``journal|year|volume|first page|author|key|`` lines, each answered
    with the PMID appended (``NOT_FOUND``, or ``AMBIGUOUS`` with several matches)."""
    data = params.text("bdata") or ""
    lines = [line for line in data.replace("\r", "\n").split("\n") if line.strip()]
    if not lines:
        raise UsageError("bdata is empty: give journal|year|volume|first page|author|key| lines")
    return "".join(_citmatch(state, line) + "\n" for line in lines)


def _citmatch(state: Opened, line: str) -> str:
    parts = (line.split("|") + [""] * 6)[:6]
    journal, year, volume, page, author, key = (p.strip() for p in parts)
    clauses = []
    if journal:
        clauses.append(f'"{journal}"[ta]')
    if year.isdigit():
        clauses.append(f"{year}[dp]")
    if author:
        clauses.append(f'"{author}"[au]')
    answer = "NOT_FOUND"
    if clauses:
        try:
            result = state.searcher.lexical.search(" AND ".join(clauses), k=200, snippets=0)
        except MedsearchError:
            result = None
        if result is not None:
            found = state.searcher.store.get_many([h.pmid for h in result.hits])
            matches = [
                p
                for p, a in found.items()
                if (not volume or (a.volume or "").strip() == volume)
                and (not page or (a.pages or "").split("-")[0].strip() == page)
            ]
            if len(matches) == 1:
                answer = str(matches[0])
            elif matches:
                answer = "AMBIGUOUS " + ",".join(map(str, sorted(matches)))
    return "|".join([journal, year, volume, page, author, key, answer])


def einfo_xml(state: Opened, params: Params) -> bytes:
    """``einfo``: the one database (pubmed), its count, fields and links."""
    from medsearch.store.snapshot import corpus_snapshot

    db = (params.text("db") or "").lower()
    if db and db != "pubmed":
        raise UsageError(f"Invalid db name specified: {db}")

    if not db:
        return build("eInfoResult", lambda root: add(add(root, "DbList"), "DbName", "pubmed"))
    snap = corpus_snapshot(state.searcher.store)

    def fill(root: Element) -> None:
        info = add(root, "DbInfo")
        add(info, "DbName", "pubmed")
        add(info, "MenuName", "PubMed")
        add(info, "Description", "PubMed bibliographic record (medsearch, local)")
        add(info, "DbBuild", snap.last_file or "local")
        add(info, "Count", snap.articles)
        add(info, "LastUpdate", "")
        fields = add(info, "FieldList")
        for tag, full in FIELD_NAMES.items():
            field = add(fields, "Field")
            add(field, "Name", tag.upper())
            add(field, "FullName", full)
            add(field, "Description", f"{full} [{tag}]")
            add(field, "TermCount", 0)
            add(field, "IsDate", "Y" if tag == "dp" else "N")
            add(field, "IsNumerical", "Y" if tag == "pmid" else "N")
            add(field, "SingleToken", "Y" if tag in ("pt", "ta", "la", "pmid") else "N")
            add(field, "Hierarchy", "Y" if tag in ("mh", "majr") else "N")
            add(field, "IsHidden", "N")
        links = add(info, "LinkList")
        for name, (menu, description) in LINKS.items():
            link = add(links, "Link")
            add(link, "Name", name)
            add(link, "Menu", menu)
            add(link, "Description", description)
            add(link, "DbTo", "pubmed")

    return build("eInfoResult", fill)
