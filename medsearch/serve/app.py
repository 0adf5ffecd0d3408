"""The Starlette application: routes, the token check, errors as answers, timings.

Starlette (on uvicorn) rather than FastAPI or a hand-written server: docs/service.md
argues the choice. Endpoints are ``async`` only to read the request; the work (SQLite,
tantivy, Faiss, torch) runs in Starlette's thread pool, one request at a time on the
warm searcher (:meth:`~medsearch.serve.state.Warm.use`), so the event loop keeps
accepting connections while a search runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from medsearch.errors import MedsearchError, NotFoundError, QuerySyntaxError, UsageError
from medsearch.serve import api
from medsearch.serve.access import token_matches
from medsearch.serve.params import Params
from medsearch.serve.state import Warm

log = logging.getLogger("medsearch.serve")

Handler = Callable[[Request, Params], Awaitable[Response]]


class OrjsonResponse(JSONResponse):
    """JSON as ``--json`` prints it (non-ASCII kept), serialised by orjson."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def status_of(exc: MedsearchError) -> int:
    """400 for what the request said wrong, 404 for what is not there, 409 for what this
    home cannot answer yet (no vectors, a missing model)."""
    if isinstance(exc, (UsageError, QuerySyntaxError)):
        return 400
    if isinstance(exc, NotFoundError):
        return 404
    return 409


async def request_params(request: Request) -> Params:
    """Query parameters, then a form body's (E-utilities clients POST long id lists)."""
    from urllib.parse import parse_qsl

    items = list(request.query_params.multi_items())
    kind = request.headers.get("content-type", "")
    if request.method == "POST" and kind.startswith("application/x-www-form-urlencoded"):
        body = (await request.body()).decode("utf-8", "replace")
        items.extend(parse_qsl(body, keep_blank_values=True))
    return Params(items)


def bearer(request: Request, params: Params) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return params.text("api_key")


def build_app(warm: Warm, token: str) -> Starlette:
    """The application over one warm home; every route needs ``token``."""
    from medsearch.serve.eutils.routes import eutils_routes

    def guarded(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` behind the token check, its MedsearchError as a JSON error (the
        E-utilities answer theirs in NCBI's shape first), and its time logged."""

        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            status = 500
            try:
                params = await request_params(request)
                if not token_matches(token, bearer(request, params)):
                    response: Response = OrjsonResponse(
                        {"error": "a token is required: Authorization: Bearer or api_key"},
                        status_code=401,
                        headers={"WWW-Authenticate": "Bearer"},
                    )
                else:
                    try:
                        response = await handler(request, params)
                    except MedsearchError as exc:
                        response = OrjsonResponse({"error": str(exc)}, status_code=status_of(exc))
                status = response.status_code
                return response
            finally:
                elapsed = (time.perf_counter() - started) * 1000
                log.info("%s %s %d %.1f ms", request.method, request.url.path, status, elapsed)

        return endpoint

    def json_route(
        path: str, work: Callable[..., Any], args: Callable[[Request, Params], tuple[Any, ...]]
    ) -> Route:
        """A GET route whose answer is ``work(state, *args(request, params))`` as JSON."""

        async def handler(request: Request, params: Params) -> Response:
            return OrjsonResponse(await warm.run(work, *args(request, params)))

        return Route(path, guarded(handler), methods=["GET"])

    async def cite_handler(request: Request, params: Params) -> Response:
        body = (await request.body()).decode("utf-8", "replace")
        if request.headers.get("content-type", "").startswith("application/x-www-form"):
            body = params.text("text") or ""
        return OrjsonResponse(await warm.run(api.cite, body, params))

    async def export_handler(request: Request, params: Params) -> Response:
        text, media = await warm.run(api.export, params)
        return Response(text, media_type=media)

    def pmid(request: Request) -> str:
        return str(request.path_params["pmid"])

    routes = [
        json_route("/health", api.health, lambda r, p: (warm,)),
        json_route("/search", api.search, lambda r, p: (p,)),
        json_route("/similar/{pmid}", api.similar, lambda r, p: (pmid(r), p)),
        json_route("/sentences", api.sentences, lambda r, p: (p,)),
        json_route("/articles/{pmid}", api.article, lambda r, p: (pmid(r),)),
        Route("/cite", guarded(cite_handler), methods=["POST"]),
        Route("/export", guarded(export_handler), methods=["GET"]),
        *eutils_routes(warm, guarded),
    ]
    return Starlette(routes=routes)
