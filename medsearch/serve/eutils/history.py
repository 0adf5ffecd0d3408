"""The History server: sets kept under a ``WebEnv``, each with its ``query_key``.

esearch (``usehistory=y``), epost and elink (``neighbor_history``) put sets here;
efetch, esummary and elink take them back by ``WebEnv`` + ``query_key``.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict

from medsearch.errors import UsageError
from medsearch.serve.params import Params


class History:
    """The History server: sets kept under a WebEnv, each with its query_key.

    In memory, for the service's life, at most :data:`KEEP` WebEnvs (the oldest go
    first): NCBI keeps them for hours; a script that outlives a restart asks again.
    """

    KEEP = 200

    def __init__(self) -> None:
        self._sets: OrderedDict[str, list[list[int]]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, web_env: str | None, pmids: list[int]) -> tuple[str, int]:
        with self._lock:
            if not web_env or web_env not in self._sets:
                web_env = "MCID_" + secrets.token_hex(12)
                self._sets[web_env] = []
                while len(self._sets) > self.KEEP:
                    self._sets.popitem(last=False)
            self._sets.move_to_end(web_env)
            self._sets[web_env].append(list(pmids))
            return web_env, len(self._sets[web_env])

    def get(self, web_env: str, query_key: int) -> list[int]:
        with self._lock:
            sets = self._sets.get(web_env)
            if sets is None:
                raise UsageError("Unable to obtain query #1")  # NCBI's words for an unknown WebEnv
            if not 1 <= query_key <= len(sets):
                raise UsageError(f"Unable to obtain query #{query_key}")
            return sets[query_key - 1]


def history_ids(history: History, params: Params) -> list[int] | None:
    """The set ``WebEnv`` + ``query_key`` name, or None when the request names none."""
    web_env = params.text("WebEnv") or params.text("webenv")
    if not web_env:
        return None
    key = params.integer("query_key", 1, 1, 1_000_000)
    return history.get(web_env, key)
