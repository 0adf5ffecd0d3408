"""Typed messages: what workers tell the UI (posted from their threads, handled on the UI's).

``ticket`` numbers each query; an answer whose ticket is not the current one belongs to
a query the user has already replaced and is dropped.
"""

from __future__ import annotations

from textual.message import Message

from medsearch.retrieval.results import SearchResult
from medsearch.tui.jobs import Answer, CiteAnswer, CorpusInfo


class CorpusOpened(Message):
    def __init__(self, info: CorpusInfo) -> None:
        self.info = info
        super().__init__()


class CorpusMissing(Message):
    """Nothing ingested yet: the welcome screen, not an error."""


class CorpusFailed(Message):
    def __init__(self, error: str) -> None:
        self.error = error
        super().__init__()


class ModelsLoaded(Message):
    def __init__(self, device: str | None, index_kind: str | None, can_rerank: bool) -> None:
        self.device = device
        self.index_kind = index_kind
        self.can_rerank = can_rerank
        super().__init__()


class ModelsFailed(Message):
    def __init__(self, error: str) -> None:
        self.error = error
        super().__init__()


class ResultsReady(Message):
    def __init__(self, ticket: int, answer: Answer) -> None:
        self.ticket = ticket
        self.answer = answer
        super().__init__()


class RerankDone(Message):
    def __init__(self, ticket: int, result: SearchResult) -> None:
        self.ticket = ticket
        self.result = result
        super().__init__()


class CiteReady(Message):
    def __init__(self, ticket: int, answer: CiteAnswer) -> None:
        self.ticket = ticket
        self.answer = answer
        super().__init__()


class WorkFailed(Message):
    """A query (or its rerank) failed with a user-facing error."""

    def __init__(self, ticket: int, error: str, stage: str) -> None:
        self.ticket = ticket
        self.error = error
        self.stage = stage
        super().__init__()


class ResultsRendered(Message):
    """Results are on screen (posted after the refresh): what tests and benchmarks wait on."""

    def __init__(self, ticket: int, count: int, reranked: bool) -> None:
        self.ticket = ticket
        self.count = count
        self.reranked = reranked
        super().__init__()


class Exported(Message):
    def __init__(self, path: str, count: int) -> None:
        self.path = path
        self.count = count
        super().__init__()
