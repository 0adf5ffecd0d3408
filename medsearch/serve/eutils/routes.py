"""The E-utilities' routes under NCBI's paths, ``/entrez/eutils/<utility>``.

Errors take NCBI's shape: HTTP 200 with the utility's own root holding ``ERROR`` (or
the JSON form's error member), which Biopython turns into a ``RuntimeError`` carrying
the message, as it does for NCBI's answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from medsearch.errors import MedsearchError, UsageError
from medsearch.records import Article
from medsearch.serve.eutils import links, records, search
from medsearch.serve.eutils.history import History, history_ids
from medsearch.serve.eutils.xmldoc import error_xml, json_bytes, json_header
from medsearch.serve.params import Params
from medsearch.serve.state import Opened, Warm

BASE = "/entrez/eutils"
XML = "text/xml; charset=UTF-8"
JSON = "application/json; charset=UTF-8"
TEXT = "text/plain; charset=UTF-8"
DECLARATION = '<?xml version="1.0" encoding="UTF-8" ?>\n'

Guard = Callable[..., Callable[[Request], Awaitable[Response]]]
Work = Callable[[Opened, Params], tuple[bytes, str]]


def _json_mode(params: Params) -> bool:
    return (params.text("retmode") or "").lower() == "json"


def _pubmed_only(params: Params) -> None:
    db = (params.text("db") or "pubmed").strip().lower()
    if db != "pubmed":
        raise UsageError(f"Invalid db name specified: {db} (this service holds pubmed only)")


def _error_for(root: str, json_key: str) -> Callable[[Params, MedsearchError], Response]:
    def answer(params: Params, exc: MedsearchError) -> Response:
        if _json_mode(params):
            body = json_bytes(
                {"header": json_header(json_key), json_key + "result": {"ERROR": str(exc)}}
            )
            return Response(body, media_type=JSON)
        if root == "eFetchResult":  # efetch's error document has no DTD at NCBI either
            text = f"<eFetchResult>\n\t<ERROR>{_escape(str(exc))}</ERROR>\n</eFetchResult>\n"
            return Response((DECLARATION + text).encode(), media_type=XML)
        return Response(error_xml(root, str(exc)), media_type=XML)

    return answer


def _escape(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(text)


def eutils_routes(warm: Warm, guarded: Guard) -> list[Route]:
    history = History()

    def route(name: str, work: Work, root: str, json_key: str) -> Route:
        on_error = _error_for(root, json_key)

        async def handler(request: Request, params: Params) -> Response:
            try:
                body, media = await warm.run(work, params)
            except MedsearchError as exc:
                return on_error(params, exc)
            return Response(body, media_type=media)

        return Route(f"{BASE}/{name}", guarded(handler), methods=["GET", "POST"])

    def esearch(state: Opened, params: Params) -> tuple[bytes, str]:
        _pubmed_only(params)
        answer = search.esearch(state, history, params)
        if _json_mode(params):
            return search.esearch_json(answer), JSON
        return search.esearch_xml(answer), XML

    def fetched(state: Opened, params: Params) -> list[Article]:
        _pubmed_only(params)
        ids = records.requested_ids(params, history_ids(history, params))
        found = state.searcher.store.get_many(ids)
        articles = records.ordered(found, ids)
        if not articles:
            raise UsageError("Empty result - nothing to do: none of the ids is in this corpus")
        return articles

    def efetch(state: Opened, params: Params) -> tuple[bytes, str]:
        body, media = records.efetch_body(fetched(state, params), params)
        return body, f"{media}; charset=UTF-8"

    def esummary(state: Opened, params: Params) -> tuple[bytes, str]:
        articles = fetched(state, params)
        if _json_mode(params):
            return records.summary_json(articles), JSON
        if (params.text("version") or "").strip() == "2.0":
            return records.summary_v2(articles), XML
        return records.summary_v1(articles), XML

    def elink(state: Opened, params: Params) -> tuple[bytes, str]:
        sets = links.elink(state, history, params)
        scores = (params.text("cmd") or "").lower() == "neighbor_score"
        if _json_mode(params):
            return links.elink_json(sets, scores), JSON
        return links.elink_xml(sets, scores), XML

    def epost(state: Opened, params: Params) -> tuple[bytes, str]:
        _pubmed_only(params)
        return links.epost_xml(state, history, params), XML

    def einfo(state: Opened, params: Params) -> tuple[bytes, str]:
        return links.einfo_xml(state, params), XML

    def espell(state: Opened, params: Params) -> tuple[bytes, str]:
        _pubmed_only(params)
        return search.espell_xml(state, params), XML

    def ecitmatch(state: Opened, params: Params) -> tuple[bytes, str]:
        _pubmed_only(params)
        return links.ecitmatch_text(state, params).encode(), TEXT

    return [
        route("esearch.fcgi", esearch, "eSearchResult", "esearch"),
        route("efetch.fcgi", efetch, "eFetchResult", "efetch"),
        route("esummary.fcgi", esummary, "eSummaryResult", "esummary"),
        route("elink.fcgi", elink, "eLinkResult", "elink"),
        route("epost.fcgi", epost, "ePostResult", "epost"),
        route("einfo.fcgi", einfo, "eInfoResult", "einfo"),
        route("espell.fcgi", espell, "eSpellResult", "espell"),
        route("ecitmatch.cgi", ecitmatch, "eFetchResult", "ecitmatch"),
    ]
