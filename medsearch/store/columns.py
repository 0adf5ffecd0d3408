"""The ``articles`` table: the plain columns people filter and count on with SQL.

Every record is kept whole as compressed JSON in ``records`` (see
:mod:`medsearch.store.codec`); that is what medsearch itself reads. ``articles`` repeats
the dozen fields researchers query (counts by year and journal, reviews in a journal
since 2015, every article of a MeSH heading) as plain SQLite columns, so any SQLite
client (``medsearch sql``, the ``sqlite3`` shell, sqlite-utils, Datasette) can read them
without a custom function. Its names are a contract scripts rely on: add columns, never
rename or remove one.

The values are computed here, from the parsed :class:`~medsearch.records.Article`, in
ingest's parser processes (:func:`~medsearch.store.rows.row_of`), so the single writer
only appends them; the migration of an older store computes them with the same function
(:mod:`medsearch.store.backfill`), so the two can never disagree.

Multi-valued fields (languages, publication types, major MeSH headings) are JSON arrays
of strings (``'["Humans","Neoplasms"]'``; ``'[]'`` when there are none), not
delimiter-joined strings: no separator can be chosen that no MeSH heading or title
contains, SQLite reads them with its built-in ``json_each`` (``EXISTS (SELECT 1 FROM
json_each(mesh_major) WHERE value = 'Neoplasms')``), Datasette facets them
(``_facet_array``), and ``json.loads`` reads them back exactly. Two side tables,
``articles_mesh_major`` and ``articles_publication_types`` (one row per article and
value), make "every article of a heading / type" an index lookup instead of a scan of
every row (a heading of 2,700 articles among 1M: 9 ms instead of 220 ms, BENCHMARKS.md).
The writer inserts their rows right after the articles' own, sorted by key
(:func:`side_rows`): with PubMed's ~30K headings each new row lands on a different page
of the index, and taking the pages in order costs ~11 us less per article than a
per-row trigger; triggers replace them when an article's values change and remove them
with the article. Missing single values are
NULL, never ``''``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

from medsearch import notices as nt
from medsearch.notice_links import ABOUT_OF
from medsearch.records import Article, Notice


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    doc: str


@dataclass(frozen=True, slots=True)
class PublicTable:
    name: str
    doc: str
    columns: tuple[Column, ...]


ARTICLES = PublicTable(
    "articles",
    "One row per article in the store (deleted PMIDs are absent); indexed on year and"
    " (journal_iso, year).",
    (
        Column("pmid", "INTEGER", "PubMed ID (primary key)."),
        Column("title", "TEXT", "Article title (a book's title for a book record)."),
        Column("year", "INTEGER", "Publication year (the first year a MedlineDate names)."),
        Column("journal", "TEXT", "Journal title, as in the record (e.g. 'The Lancet')."),
        Column("journal_iso", "TEXT", "ISO journal abbreviation (e.g. 'Lancet')."),
        Column(
            "first_author",
            "TEXT",
            "First author as PubMed prints it ('Smith JA'), or a collective name.",
        ),
        Column(
            "last_author", "TEXT", "Last author, likewise (the first one when there is only one)."
        ),
        Column("doi", "TEXT", "DOI, as the record's article ids give it."),
        Column("pmcid", "TEXT", "PubMed Central ID ('PMC1234567')."),
        Column("language", "TEXT", "Languages, a JSON array of codes: '[\"eng\"]'."),
        Column(
            "publication_types",
            "TEXT",
            'Publication types, a JSON array: \'["Journal Article","Review"]\'.',
        ),
        Column(
            "mesh_major",
            "TEXT",
            "Major MeSH headings (PubMed's [majr]: the heading or"
            " one of its qualifiers is a major topic), a JSON array of descriptor names.",
        ),
        Column(
            "retracted",
            "INTEGER",
            "1 when the article is retracted (a RetractionIn link or the publication type"
            " 'Retracted Publication'), else 0.",
        ),
        Column(
            "notice",
            "TEXT",
            "The strongest notice about the article: 'retracted', 'expression of concern',"
            " 'corrected', 'updated'; NULL when there is none (indexed where not NULL).",
        ),
        Column(
            "notices",
            "TEXT",
            "Every notice about the article, strongest first, a JSON array of objects:"
            ' \'[{"status":"retracted","type":"RetractionIn","pmid":32167152}]\'.',
        ),
        Column(
            "notice_for",
            "TEXT",
            "The articles this record is itself a notice about (a retraction notice's"
            " RetractionOf ...), a JSON array of the same objects, pmid the article's.",
        ),
    ),
)

MESH_MAJOR = PublicTable(
    "articles_mesh_major",
    "One row per article and major MeSH heading: `WHERE heading = ?` is an index lookup.",
    (
        Column("heading", "TEXT", "MeSH descriptor name, as in articles.mesh_major."),
        Column("pmid", "INTEGER", "The article (articles.pmid)."),
    ),
)

PUBLICATION_TYPES = PublicTable(
    "articles_publication_types",
    "One row per article and publication type: `WHERE publication_type = ?` is an index lookup.",
    (
        Column("publication_type", "TEXT", "As in articles.publication_types."),
        Column("pmid", "INTEGER", "The article (articles.pmid)."),
    ),
)

PUBLIC_TABLES = (ARTICLES, MESH_MAJOR, PUBLICATION_TYPES)
NAMES = tuple(c.name for c in ARTICLES.columns)

ArticleRow = tuple[
    int,  # pmid
    str | None,  # title
    int | None,  # year
    str | None,  # journal
    str | None,  # journal_iso
    str | None,  # first_author
    str | None,  # last_author
    str | None,  # doi
    str | None,  # pmcid
    str,  # language (JSON)
    str,  # publication_types (JSON)
    str,  # mesh_major (JSON)
    int,  # retracted
    str | None,  # notice
    str,  # notices (JSON)
    str,  # notice_for (JSON)
]


def json_array(values: tuple[str, ...] | list[str]) -> str:
    """A JSON array as SQLite text (orjson writes UTF-8 unescaped, so ``LIKE`` sees ``ä``)."""
    return orjson.dumps(list(values)).decode()


def article_row(article: Article) -> ArticleRow:
    """The ``articles`` row of ``article``, in :data:`NAMES` order."""
    authors = article.authors
    majors = list(dict.fromkeys(m.descriptor for m in article.mesh if m.is_major))
    about = nt.notices(article)
    return (
        article.pmid,
        article.title or None,
        article.year,
        article.journal or None,
        article.journal_abbrev or None,
        article.first_author or None,
        (authors[-1].display or None) if authors else None,
        article.doi or None,
        article.pmcid or None,
        json_array(article.languages),
        json_array(list(dict.fromkeys(article.publication_types))),
        json_array(majors),
        int(bool(about) and about[0].status == nt.RETRACTED),
        about[0].status if about else None,
        notices_json(about),
        notices_json(nt.notice_for(article)),
    )


def notices_json(found: Sequence[Notice]) -> str:
    return orjson.dumps([n.to_dict() for n in found]).decode()


def notices_from_json(text: str | None) -> tuple[Notice, ...]:
    """The ``notices`` column back into :class:`Notice` values."""
    return tuple(Notice(d["status"], d["type"], d.get("pmid")) for d in orjson.loads(text or "[]"))


ARTICLES_UPSERT = (
    f"INSERT INTO articles({', '.join(NAMES)}) VALUES ({', '.join('?' * len(NAMES))})"
    " ON CONFLICT(pmid) DO UPDATE SET " + ", ".join(f"{n}=excluded.{n}" for n in NAMES[1:])
)
MESH_INSERT = "INSERT OR IGNORE INTO articles_mesh_major(heading, pmid) VALUES (?, ?)"
TYPES_INSERT = (
    "INSERT OR IGNORE INTO articles_publication_types(publication_type, pmid) VALUES (?, ?)"
)


def side_rows(
    rows: Iterable[ArticleRow],
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """The side tables' rows for ``rows`` (upserted just before), sorted by key.

    A PMID given twice counts as its last row, as the upsert does; for one already
    stored, the update trigger has replaced its side rows and these add nothing.
    """
    final: Sequence[ArticleRow] = list({row[0]: row for row in rows}.values())
    mesh = sorted((h, row[0]) for row in final for h in orjson.loads(row[11]))
    types = sorted((t, row[0]) for row in final for t in orjson.loads(row[10]))
    return mesh, types


def late_notices(rows: Iterable[ArticleRow]) -> dict[int, list[Notice]]:
    """What the notices among ``rows`` say about other articles, by those articles' PMIDs,
    as the articles' own records would say it (``RetractionOf`` becomes ``RetractionIn``
    naming the notice): see :meth:`medsearch.store.db.Store.add_late_notices`."""
    out: dict[int, list[Notice]] = {}
    for row in rows:
        about_others = row[-1]  # notice_for, the last column
        if about_others == "[]":
            continue
        for notice in notices_from_json(about_others):
            if notice.pmid is not None and notice.pmid != row[0]:
                about = ABOUT_OF.get(notice.ref_type, notice.ref_type)
                out.setdefault(notice.pmid, []).append(Notice(notice.status, about, row[0]))
    return out
