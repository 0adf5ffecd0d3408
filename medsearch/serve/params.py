"""Reading a request's parameters by the command line's rules, with its errors.

Each reader raises :class:`~medsearch.errors.UsageError` naming the parameter, which the
service answers with 400 and that one line, as the CLI prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from medsearch.errors import UsageError
from medsearch.records import MAX_PMID, Filters, pmid_from


class Params:
    """A request's query parameters (repeated ones kept), read one by one."""

    def __init__(self, items: Sequence[tuple[str, str]]) -> None:
        self.items = list(items)

    @classmethod
    def of(cls, mapping: Mapping[str, str] | Sequence[tuple[str, str]]) -> Params:
        return cls(list(mapping.items()) if isinstance(mapping, Mapping) else list(mapping))

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.items if k == name]

    def text(self, name: str, default: str | None = None) -> str | None:
        values = self.all(name)
        return values[-1] if values else default

    def required(self, name: str) -> str:
        value = self.text(name)
        if value is None or not value.strip():
            raise UsageError(f"missing parameter {name!r}")
        return value

    def integer(self, name: str, default: int, lo: int, hi: int) -> int:
        value = self.text(name)
        if value is None or value == "":
            return default
        try:
            number = int(value)
        except ValueError:
            raise UsageError(f"{name} must be a whole number, not {value!r}") from None
        if not lo <= number <= hi:
            raise UsageError(f"{name} must be between {lo} and {hi}, not {number}")
        return number

    def flag(self, name: str) -> bool:
        value = (self.text(name) or "").strip().lower()
        if value in ("", "0", "false", "no", "n"):
            return False
        if value in ("1", "true", "yes", "y"):
            return True
        raise UsageError(f"{name} must be true or false, not {value!r}")

    def choice(self, name: str, choices: Sequence[str], default: str | None) -> str | None:
        value = self.text(name)
        if value is None or value == "":
            return default
        if value not in choices:
            raise UsageError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")
        return value


def pmid_of(value: str) -> int:
    """A PMID by the store's rule, or the usage error the CLI gives."""
    pmid = pmid_from(value)
    if pmid is None:
        raise UsageError(f"a PMID is a positive whole number up to {MAX_PMID}, not {value!r}")
    return pmid


def pmids_of(text: str) -> list[int]:
    """Comma- or space-separated PMIDs (E-utilities' ``id=1,2,3``)."""
    return [pmid_of(v) for v in text.replace(",", " ").split()]


def filters_of(params: Params) -> Filters:
    """``year``, ``journal`` (repeatable), ``type`` (repeatable), ``exclude_retracted``
    and ``date``: the CLI's filter options under the same names."""
    from medsearch.commands.common import make_filters
    from medsearch.commands.search import date_filter

    filters = make_filters(
        params.text("year"),
        tuple(params.all("journal")),
        tuple(params.all("type")),
        params.flag("exclude_retracted"),
    )
    date = params.text("date")
    if date:
        filters = filters.merge(date_filter(date))
    return filters
