"""What the CLI asks a running ``medsearch serve`` for its home, when one answers.

The commands that read (``search``, ``similar``, ``sentences``, ``cite``, ``show``,
``export``) call :func:`ask` first: with the home's socket present and its token
readable, the question goes to the warm service, and the command prints its answer
(``"served": true`` in ``--json``). Without a service (no socket, nobody listening, a
token that no longer matches) :func:`ask` returns None and the command works alone, as
it always has. Plain ``http.client`` over the Unix socket: the CLI needs no HTTP
library and starts no event loop for it.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from medsearch.errors import MedsearchError, NotFoundError, UsageError
from medsearch.paths import Paths
from medsearch.serve.access import read_token

Param = tuple[str, str | int | None]
"""A query parameter; one whose value is None is left out."""

CONNECT_SECONDS = 1.0
"""How long to wait for the service to accept: it is local, so it answers at once or not at all."""
ANSWER_SECONDS = 600.0
"""How long a question may take (a deep export, a cite of a long paragraph on a CPU)."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("medsearch", timeout=ANSWER_SECONDS)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_SECONDS)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        sock.settimeout(ANSWER_SECONDS)
        self.sock = sock


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes
    media: str

    def json(self) -> Any:
        return json.loads(self.body)


def _request(
    paths: Paths, method: str, path: str, params: Sequence[tuple[str, str]], body: str | None
) -> Answer | None:
    socket_file = paths.serve_socket
    if not socket_file.exists():
        return None
    token = read_token(paths)
    if token is None:
        return None
    target = path + ("?" + urlencode(list(params)) if params else "")
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "text/plain; charset=utf-8"
    connection = _UnixConnection(str(socket_file))
    try:
        connection.request(method, target, body.encode() if body is not None else None, headers)
        response = connection.getresponse()
        answer = Answer(response.status, response.read(), response.getheader("content-type", ""))
    except (OSError, http.client.HTTPException):
        return None  # nobody listens (a socket left by a killed service), or it went away
    finally:
        connection.close()
    return None if answer.status == 401 else answer


def _raise(answer: Answer) -> None:
    """The service's error as the command's own: the same line, the same exit status."""
    try:
        message = str(answer.json()["error"])
    except (ValueError, KeyError, TypeError):
        message = answer.body.decode("utf-8", "replace").strip() or f"HTTP {answer.status}"
    if answer.status == 400:
        raise UsageError(message)
    if answer.status == 404:
        raise NotFoundError(message)
    raise MedsearchError(message)


def ask(
    paths: Paths,
    path: str,
    params: Sequence[Param] = (),
    *,
    body: str | None = None,
) -> dict[str, Any] | None:
    """The service's JSON answer with ``"served": true``, or None when no service answers
    for this home. Its errors are raised as the command would raise them.
    ``params`` with a None value are left out."""
    kept = [(k, str(v)) for k, v in params if v is not None]
    answer = _request(paths, "POST" if body is not None else "GET", path, kept, body)
    if answer is None:
        return None
    if answer.status != 200:
        _raise(answer)
    out = answer.json()
    if not isinstance(out, dict):
        raise MedsearchError("the service answered something other than a JSON object")
    out["served"] = True
    return out


def ask_text(paths: Paths, path: str, params: Sequence[Param] = ()) -> tuple[int, str] | None:
    """A text answer (``/export``) with its status, or None when no service answers."""
    kept = [(k, str(v)) for k, v in params if v is not None]
    answer = _request(paths, "GET", path, kept, None)
    if answer is None:
        return None
    return answer.status, answer.body.decode("utf-8")


def pmid_path(prefix: str, pmid: int) -> str:
    return f"{prefix}/{quote(str(pmid))}"


def filter_params(
    year: str | None, journals: Sequence[str], types: Sequence[str], exclude_retracted: bool
) -> list[Param]:
    """The filter options as the service's parameters (the same names)."""
    out: list[Param] = [("year", year)]
    out += [("journal", j) for j in journals]
    out += [("type", t) for t in types]
    if exclude_retracted:
        out.append(("exclude_retracted", "true"))
    return out


def usable(profile: str | None, device: str) -> bool:
    """Whether the service can answer for these options: it runs with the home's own
    profile on its own device, so a command asking for another works alone."""
    return profile is None and device == "auto"
