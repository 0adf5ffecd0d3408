"""What a hit and an article look like on screen: plain functions returning rich Text.

Kept apart from the widgets so the look is testable without running an app, and so a
results row, the detail pane and the clipboard citation agree on every field.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text

from medsearch.notices import describe, describe_for, notice_for, notices
from medsearch.records import Article, Hit, Notice
from medsearch.retrieval.results import BEYOND, beyond
from medsearch.tui.highlight import highlighted, snippet_text

PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
DOI_URL = "https://doi.org/{doi}"
PMC_URL = "https://www.ncbi.nlm.nih.gov/pmc/articles/{pmcid}/"
MARK = "●"
NOTICE_STYLES = {"retracted": "bold white on red", "expression of concern": "bold yellow"}
"""A retraction must not be missed; an erratum or an update is a note."""


def notice_line(found: tuple[Notice, ...]) -> Text:
    """``RETRACTED (retraction PMID 32167152)`` in its status's style."""
    return Text(
        describe(found),
        style=NOTICE_STYLES.get(found[0].status, "yellow"),
        no_wrap=True,
        overflow="ellipsis",
    )


def sources_label(sources: Iterable[str]) -> str:
    """``lexical``, ``dense`` or ``both``: which side of the hybrid search found the hit."""
    found = set(sources)
    if {"lexical", "dense"} <= found:
        return "both"
    return next(iter(sorted(found)), "")


def authors_short(authors: tuple[str, ...]) -> str:
    if not authors:
        return "(no authors)"
    return authors[0] + (" et al." if len(authors) > 1 else "")


def hit_prompt(hit: Hit, *, marked: bool, terms: frozenset[str]) -> Table:
    """A results row: rank and title, then author, journal, year, PMID and sources.

    The title wraps under itself (a hanging indent after the rank); the meta line and
    the snippet or evidence sentence are one line each, cut with an ellipsis.
    """
    gutter = Text(MARK if marked else " ", style="bold #87d787")
    gutter.append(f"{hit.rank:>3}.", style="bold")
    meta = Text(style="dim", no_wrap=True, overflow="ellipsis")
    outside = hit.in_corpus is False
    if outside:  # no record here: no authors, journal or year to show empty
        meta.append("not stored here" + (f" · PMID {hit.pmid}" if hit.pmid else ""))
    else:
        meta.append(authors_short(hit.authors))
        meta.append(" · ")
        meta.append(hit.journal or "", style="italic")
        meta.append(f" · {hit.year or 'n.d.'} · PMID {hit.pmid}")
    label = sources_label(hit.sources)
    if label:
        meta.append(f" · {label}", style="cyan")
    if beyond(hit):
        meta.append(f" · {BEYOND}", style="yellow")
    if hit.cited_by is not None:
        meta.append(f" · cited by {hit.cited_by} here", style="magenta")
    if outside and hit.doi:
        meta.append(f" · doi:{hit.doi}")
    # a reference not stored here reads as its citing record cites it, where it does
    title = hit.title or (hit.citation or "(not in this corpus)" if outside else "(no title)")
    body: list[Text] = [highlighted(title, terms, style="bold"), meta]
    if hit.notices:
        body.insert(1, notice_line(hit.notices))
    if hit.notice_for:
        body.insert(1, Text(describe_for(hit.notice_for), style="bold", no_wrap=True))
    evidence = (hit.sentence.text if hit.sentence else "") or (
        hit.evidence.text if hit.evidence else ""
    )
    if evidence:
        quote = Text("“", style="italic", no_wrap=True, overflow="ellipsis")
        quote.append_text(highlighted(str(evidence), terms, style="italic"))
        quote.append("”")
        body.append(quote)
    elif hit.snippet:
        snippet = snippet_text(hit.snippet, style="dim")
        snippet.no_wrap, snippet.overflow = True, "ellipsis"
        body.append(snippet)
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(width=5, no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(gutter, Group(*body))
    return grid


def basket_prompt(article: Article) -> Text:
    """A basket row: the title, then first author, journal, year and PMID."""
    out = Text(MARK + " ", style="bold #87d787")
    out.append(article.title or "(no title)", style="bold")
    if found := notices(article):
        out.append("\n  ").append_text(notice_line(found))
    out.append(
        f"\n  {authors_short(tuple(a.display for a in article.authors))} · "
        f"{article.journal_abbrev or article.journal} · {article.year or 'n.d.'}"
        f" · PMID {article.pmid}",
        style="dim",
    )
    return out


def citation(article: Article) -> str:
    """One-line reference for the clipboard (authors, title, journal, DOI, PMID)."""
    names = [a.display for a in article.authors]
    authors = ", ".join(names[:6]) + (", et al" if len(names) > 6 else "")
    parts = [
        f"{authors}." if authors else "",
        article.title.rstrip(".") + ".",
        article.journal_citation,
    ]
    if article.doi:
        parts.append(f"doi:{article.doi}.")
    parts.append(f"PMID: {article.pmid}.")
    return " ".join(p for p in parts if p)


def links(article: Article) -> list[tuple[str, str]]:
    out = [("PubMed", PUBMED_URL.format(pmid=article.pmid))]
    if article.doi:
        out.append(("DOI", DOI_URL.format(doi=article.doi)))
    if article.pmcid:
        out.append(("PMC", PMC_URL.format(pmcid=article.pmcid)))
    return out


def article_detail(
    article: Article, terms: frozenset[str], citations: tuple[int, int] | None = None
) -> Text:
    """The detail pane: title, authors, citation, labelled abstract, MeSH, types, links;
    with ``citations`` (references, cited by) when the article has either."""
    parts: list[Text] = [highlighted(article.title or "(no title)", terms, style="bold")]
    if found := notices(article):
        parts.append(notice_line(found))
    if about := notice_for(article):
        parts.append(Text(describe_for(about), style="bold"))
    parts.append(Text(", ".join(a.display for a in article.authors) or "(no authors)"))
    parts.append(Text(article.journal_citation, style="italic"))
    if citations is not None and any(citations):
        refs, cited = citations
        parts.append(
            Text(f"References ({refs})", style="bold magenta")
            .append(" ctrl+e", style="dim")
            .append("   ")
            .append(f"Cited by ({cited})", style="bold magenta")
            .append(" ctrl+g · in this corpus", style="dim")
        )
    parts.append(Text(""))
    if not article.abstract:
        parts.append(Text("(no abstract)", style="dim"))
    for section in article.abstract:
        para = Text()
        if section.label:
            para.append(f"{section.label.upper()}: ", style="bold cyan")
        para.append_text(highlighted(section.text, terms))
        parts.extend([para, Text("")])
    if article.mesh:
        mesh = Text("MeSH: ", style="bold")
        for i, heading in enumerate(article.mesh):
            name = heading.descriptor + ("*" if heading.is_major else "")
            mesh.append(("; " if i else "") + name)
        parts.append(mesh)
    if article.publication_types:
        parts.append(Text("Type: ", style="bold").append(", ".join(article.publication_types)))
    for name, url in links(article):
        parts.append(Text(f"{name}: ", style="bold").append(url, style=f"underline link {url}"))
    return Text("\n").join(parts)
