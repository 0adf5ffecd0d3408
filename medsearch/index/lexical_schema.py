"""The lexical index's schema, analyzers and Article -> document mapping.

One analyzer definition serves indexing and querying: :func:`analyzers` builds the
tantivy ``TextAnalyzer`` objects that are registered on the index (so tantivy analyzes
documents with them) and that the query builder calls directly (so query words become
exactly the indexed tokens). Text first passes :func:`medsearch.query.normalize_text`
(Greek letters spelled out), then the analyzer:

* tokens are runs of letters or runs of digits (``[\\p{L}\\p{M}]+|\\p{N}+``), so a letter
  -digit join splits: ``COVID-19``, ``COVID 19`` and ``covid19`` all become ``covid 19``,
  ``IL-6``/``IL6`` become ``il 6`` and ``BRCA1/2`` becomes ``brca 1 2``. A query word that
  yields several tokens becomes a phrase, so it still means the compound;
* lower-casing, ASCII folding (``Müller`` = ``muller``), tokens over 40 bytes dropped;
* English (Porter 2) stemming for ranked text; names, journals and types are not stemmed.

Stop words are kept in the index (they matter inside ``vitamin a`` or ``5-HT(2A)``); the
query builder drops stand-alone ones from ranked OR queries instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tantivy

from medsearch.query.normalize import normalize_text
from medsearch.records import Article

SCHEMA_VERSION = 3  # 2: no stored title/abstract (snippets read the store); 3: TITLE_ALONE
READABLE_VERSIONS = (2, 3)
"""Formats a search can read: a format-2 index ranks as it always did (see
``lexical_query.LEGACY_RANKING``) until the next ``medsearch ingest`` rebuilds it."""
TEXT_ANALYZER = "med_text"  # stemmed, for title/abstract/MeSH/keywords
NAME_ANALYZER = "med_name"  # not stemmed, for author names
TOKEN_PATTERN = r"[\p{L}\p{M}]+|\p{N}+"
MAX_TOKEN_BYTES = 40

# Fields. Text fields are indexed with positions (phrases, COVID-19) and not stored:
# snippets are made from the article store's copy of the text.
PMID = "pmid"
TITLE = "title"
ABSTRACT = "abstract"
# The title again, only for records without an abstract (11.6M of PubMed's 40.9M): ranked
# words sum their field scores (one flat union, ~2x cheaper than dis_max at scale), and a
# sum that halves the title would halve a title-only record's only evidence; this field
# gives it back (see RANKED_FIELDS in lexical_query.py).
TITLE_ALONE = "title_alone"
MESH = "mesh"
MESH_MAJOR = "mesh_major"
KEYWORDS = "keywords"
AUTHORS = "authors"
FIRST_AUTHOR = "first_author"
JOURNAL_KEY = "journal_key"  # casefolded full title and ISO abbreviation, exact
PUB_TYPE = "pub_type"  # casefolded, exact
LANGUAGE = "language"  # casefolded, exact
YEAR = "year"
META = "meta"  # "commit" on the single bookkeeping document holding the commit payload
PAYLOAD = "payload"
META_COMMIT = "commit"

STEMMED_FIELDS = (TITLE, ABSTRACT, TITLE_ALONE, MESH, MESH_MAJOR, KEYWORDS)
NAME_FIELDS = (AUTHORS, FIRST_AUTHOR)
EXACT_FIELDS = (JOURNAL_KEY, PUB_TYPE, LANGUAGE)


@dataclass(frozen=True, slots=True)
class Analyzers:
    text: Any  # tantivy.TextAnalyzer (untyped extension type)
    name: Any

    def tokens(self, text: str, *, stem: bool = True) -> list[tuple[int, str]]:
        """``(position, token)`` pairs of ``text`` exactly as the index holds them."""
        analyzer = self.text if stem else self.name
        return [(t.position, t.text) for t in analyzer.pre_tokenize(normalize_text(text)).tokens]


def _analyzer(stem: bool) -> Any:
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(TOKEN_PATTERN))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
    )
    if stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


def analyzers() -> Analyzers:
    return Analyzers(text=_analyzer(stem=True), name=_analyzer(stem=False))


def register(index: Any, analyzer_set: Analyzers) -> None:
    """Register the analyzers on ``index``: needed on every open, tantivy does not persist them."""
    index.register_tokenizer(TEXT_ANALYZER, analyzer_set.text)
    index.register_tokenizer(NAME_ANALYZER, analyzer_set.name)


def build_schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field(PMID, stored=True, indexed=True, fast=True)
    for name in STEMMED_FIELDS:
        sb.add_text_field(name, tokenizer_name=TEXT_ANALYZER, index_option="position")
    for name in NAME_FIELDS:
        sb.add_text_field(name, tokenizer_name=NAME_ANALYZER, index_option="position")
    for name in (*EXACT_FIELDS, META):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_integer_field(YEAR, indexed=True, fast=True)
    sb.add_bytes_field(PAYLOAD, stored=True)
    return sb.build()


def exact_key(value: str) -> str:
    """How journals, publication types and languages are compared: ``Filters.accepts``."""
    return value.casefold()


Fields = dict[str, list[Any]]
"""A document's indexed fields as plain data (field -> values): cheap to pickle, so
ingest's parser processes build them and the writer only hands them to tantivy."""


def article_fields(article: Article) -> Fields:
    """The indexed fields of ``article``."""
    fields: Fields = {PMID: [article.pmid]}

    def add(name: str, value: Any) -> None:
        fields.setdefault(name, []).append(value)

    abstract = article.abstract_text
    if article.title:
        title = normalize_text(article.title)
        add(TITLE, title)
        if not abstract:
            add(TITLE_ALONE, title)
    if abstract:
        add(ABSTRACT, normalize_text(abstract))
    for heading in article.mesh:
        add(MESH, normalize_text(heading.descriptor))
        for qualifier in heading.qualifiers:
            add(MESH, normalize_text(qualifier.name))
        if heading.is_major:
            add(MESH_MAJOR, normalize_text(heading.descriptor))
    for keyword in article.keywords:
        add(KEYWORDS, normalize_text(keyword))
    for i, author in enumerate(article.authors):
        name = normalize_text(author.display)
        add(AUTHORS, name)
        if i == 0:
            add(FIRST_AUTHOR, name)
    for journal in sorted({exact_key(j) for j in (article.journal, article.journal_abbrev) if j}):
        add(JOURNAL_KEY, journal)
    for pub_type in sorted({exact_key(t) for t in article.publication_types}):
        add(PUB_TYPE, pub_type)
    for language in sorted({exact_key(lang) for lang in article.languages}):
        add(LANGUAGE, language)
    if article.year is not None:
        add(YEAR, article.year)
    return fields


def fields_document(fields: Fields, schema: Any) -> Any:
    return tantivy.Document.from_dict(fields, schema)


def payload_document(payload: str) -> Any:
    doc = tantivy.Document()
    doc.add_text(META, META_COMMIT)
    doc.add_bytes(PAYLOAD, payload.encode())
    return doc
