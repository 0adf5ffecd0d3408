"""One record of a screening project, and the keys that find its duplicates."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace

from medsearch.records import Article


@dataclass(frozen=True, slots=True)
class Item:
    """A record to screen: what a reviewer reads and what finds it again.

    ``label`` is a decision that came with the import (ASReview's ``label_included``:
    1 included, 0 excluded); ``row`` the record's own id in the imported file (its
    ``record_id``, else its position from 1), which a simulation prints when there is no
    PMID."""

    title: str
    abstract: str = ""
    pmid: int | None = None
    doi: str | None = None
    year: int | None = None
    authors: tuple[str, ...] = ()
    journal: str = ""
    keywords: tuple[str, ...] = ()
    mesh: tuple[str, ...] = ()
    label: int | None = None
    row: int | None = None
    matched_by: str | None = None
    """How the record was found in the store: ``pmid``, ``doi``, ``title``; None when it is
    kept as imported."""

    @property
    def text(self) -> str:
        """What the ranking model reads: title and abstract (keywords and MeSH too)."""
        return " ".join(
            part for part in (self.title, self.abstract, " ".join(self.keywords)) if part
        )

    @property
    def first_author(self) -> str:
        return self.authors[0] if self.authors else ""

    def with_article(self, article: Article, matched_by: str) -> Item:
        """This record completed from the store's article (the store's fields win where
        the import left them empty; the imported label and row are kept)."""
        return replace(
            self,
            pmid=article.pmid,
            title=self.title or article.title,
            abstract=self.abstract or article.abstract_text,
            doi=self.doi or article.doi,
            year=self.year or article.year,
            authors=self.authors or tuple(a.display for a in article.authors),
            journal=self.journal or article.journal,
            keywords=self.keywords or article.keywords,
            mesh=self.mesh or tuple(m.descriptor for m in article.mesh),
            matched_by=matched_by,
        )


def from_article(article: Article, row: int | None = None) -> Item:
    """A record taken from the store (a strategy's result)."""
    return Item(
        title=article.title,
        abstract=article.abstract_text,
        pmid=article.pmid,
        doi=article.doi,
        year=article.year,
        authors=tuple(a.display for a in article.authors),
        journal=article.journal,
        keywords=article.keywords,
        mesh=tuple(m.descriptor for m in article.mesh),
        row=row,
        matched_by="pmid",
    )


def folded(text: str) -> str:
    """Case, accents and punctuation ignored; words kept: the title key of a duplicate."""
    text = unicodedata.normalize("NFKD", text.casefold())
    letters = "".join(c if c.isalnum() else " " for c in text if not unicodedata.combining(c))
    return " ".join(letters.split())


def surname(author: str) -> str:
    """The family name of ``Smith J``, ``Smith, John``, ``John Smith``, folded."""
    author = author.strip()
    if "," in author:
        return folded(author.split(",", 1)[0])
    words = folded(author).split()
    if not words:
        return ""
    # ``Smith J`` / ``Smith JA`` (MEDLINE): initials last; ``John Smith``: surname last
    if len(words) > 1 and len(words[-1]) <= 2:
        return words[0]
    return words[-1]


def doi_key(doi: str | None) -> str | None:
    return doi.strip().casefold() if doi else None


def title_year_author(item: Item) -> str | None:
    """The third duplicate key: normalised title, year and first author's surname. None
    when the title is empty (nothing to compare)."""
    title = folded(item.title)
    if not title:
        return None
    return f"{title}|{item.year or ''}|{surname(item.first_author)}"
