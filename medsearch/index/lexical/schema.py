# Over 450 lines: the fields, the analyzers and the Article -> document mapping change
# together, under one format version.
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

Documents reach tantivy already split (:func:`words`: the tokens joined by spaces), and
the index splits them back on spaces. tantivy's regex tokenizer costs ~0.4 us a token,
~90 us of indexing-thread CPU a synthetic article and ~100-130 us a real one;
:func:`words` costs ~15 us a real article, in the parser processes, which ingest runs
on every core. Queries and snippets keep the regex tokenizer on the raw text, for its
character offsets; the two split alike on every character Python's Unicode tables know
(``tests/test_lexical_words.py``), so an index built either way answers the same, and
indexes built before need no rebuild.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import orjson
import regex
import tantivy

from medsearch import field_keys as fk
from medsearch.notice_links import RETRACTED_TYPE, is_retracted
from medsearch.query.normalize import normalize_text
from medsearch.records import Article

SCHEMA_VERSION = 6  # 2: no stored title/abstract; 3: TITLE_ALONE; 4: the field-tag fields;
# 5: AUTHOR_KEY, SUPPLEMENTARY ([nm]) and ELECTRONIC_DATE; 6: PubMed's own fields (issue
# 39): OTHER_ABSTRACT, TEXT_WORD, JOURNAL_WORDS, REGISTRY, the record dates, and a
# year-only print date read as the electronic date in its year (field_keys.print_span)
READABLE_VERSIONS = (6,)
"""Formats a search can read. An older index lacks the fields PubMed's tags need
(``[mh]`` headings, journal keys, dates) and would answer them wrongly, so it is refused
with the fix; ``medsearch ingest`` rebuilds it from the store (``ingest.lexical_sync``)."""
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
# gives it back (see RANKED_FIELDS in query.py).
TITLE_ALONE = "title_alone"
MESH = "mesh"
MESH_MAJOR = "mesh_major"
KEYWORDS = "keywords"
AUTHORS = "authors"
FIRST_AUTHOR = "first_author"
JOURNAL_KEY = "journal_key"  # field_keys.journal_key of titles, abbreviations, ISSNs
# The field tags' own fields (format 4). On 936 real records they take the index from
# 963 to 1,437 bytes an article: affiliations ~175 B, full and last authors ~150 B (both
# with positions, for phrases), MeSH heading keys ~80 B, dates ~10 B; a small corpus
# overstates it (its term dictionaries are mostly singletons), and ingest's parser
# processes spend ~45 us more a record building them.
MESH_HEADING = "mesh_heading"  # field_keys.heading_key: "cataract", "cataract/surgery"
MESH_MAJOR_HEADING = "mesh_major_heading"
MESH_SUBHEADING = "mesh_subheading"  # qualifier names: [sh]
ARTICLE_ID = "article_id"  # casefolded DOIs, PMCIDs, PIIs: [aid]
SUBSET = "subset"  # field_keys.SUBSETS: [sb]
# Supplementary concepts and chemicals, field_keys.name_key of each name: [nm] (format 5)
SUPPLEMENTARY = "supplementary"
FULL_AUTHOR = "full_author"  # "Lastname Forename": [fau]
# "smith j", "smith ja" (the last name and each prefix of the initials), "1 smith j" for
# the first author, "$ smith j" for the last: [au], [1au] and [lastau] with initials, one
# term each (format 5; see author_keys)
AUTHOR_KEY = "author_key"
LAST_AUTHOR = "last_author"  # "Lastname AB": [lastau]
AFFILIATION = "affiliation"  # [ad], words not stemmed (place and institution names)
GRANT = "grant"  # grant number, acronym and agency: [gr]
DATE_START = "date_start"  # field_keys.date_span: YYYYMMDD, for [dp] and --date
DATE_END = "date_end"
ELECTRONIC_DATE = "electronic_date"  # YYYYMMDD of ArticleDate: [dp] and --date match it too
# Format 6: what PubMed's [tiab], [tw] and [all] search beyond the fields above.
OTHER_ABSTRACT = "other_abstract"  # OtherAbstract texts: [tiab], [tw], [all], untagged
# The rest of PubMed's text words ([tw], help page "Text Words"): publication types,
# substance names, personal names as subject, corporate authors, secondary source IDs
# and comment/correction notes, one value each
TEXT_WORD = "text_word"
JOURNAL_WORDS = "journal_words"  # journal titles and abbreviations as words: [all]
REGISTRY = "registry"  # field_keys.name_key of EC/CAS/UNII registry numbers: [rn]
# YYYYMMDD record dates (field_keys.RECORD_DATES), one field per date tag
RECORD_DATE_FIELDS = {tag: f"date_{tag}" for tag in ("crdt", "edat", "mhda", "dcom", "lr")}
PUB_TYPE = "pub_type"  # casefolded, exact
LANGUAGE = "language"  # casefolded, exact
YEAR = "year"
META = "meta"  # "commit" on the single bookkeeping document holding the commit payload
PAYLOAD = "payload"
META_COMMIT = "commit"

STEMMED_FIELDS = (
    TITLE,
    ABSTRACT,
    TITLE_ALONE,
    MESH,
    MESH_MAJOR,
    KEYWORDS,
    OTHER_ABSTRACT,
    TEXT_WORD,
)
NAME_FIELDS = (
    AUTHORS,
    FIRST_AUTHOR,
    FULL_AUTHOR,
    LAST_AUTHOR,
    AFFILIATION,
    GRANT,
    JOURNAL_WORDS,
)
EXACT_FIELDS = (
    AUTHOR_KEY,
    JOURNAL_KEY,
    PUB_TYPE,
    LANGUAGE,
    MESH_HEADING,
    MESH_MAJOR_HEADING,
    MESH_SUBHEADING,
    ARTICLE_ID,
    SUBSET,
    SUPPLEMENTARY,
    REGISTRY,
)


@dataclass(frozen=True, slots=True)
class Analyzers:
    text: Any  # tantivy.TextAnalyzer (untyped extension type)
    name: Any

    def tokens(self, text: str, *, stem: bool = True) -> list[tuple[int, str]]:
        """``(position, token)`` pairs of ``text`` exactly as the index holds them."""
        analyzer = self.text if stem else self.name
        return [(t.position, t.text) for t in analyzer.pre_tokenize(normalize_text(text)).tokens]


def _analyzer(stem: bool, *, presplit: bool = False) -> Any:
    """The analyzer; ``presplit``: over :func:`words`' output (what the index registers)."""
    tokenizer = (
        tantivy.Tokenizer.whitespace() if presplit else tantivy.Tokenizer.regex(TOKEN_PATTERN)
    )
    builder = (
        tantivy.TextAnalyzerBuilder(tokenizer)
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
    )
    if stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


def analyzers() -> Analyzers:
    return Analyzers(text=_analyzer(stem=True), name=_analyzer(stem=False))


def register(index: Any) -> None:
    """Register the analyzers on ``index``: needed on every open, tantivy does not persist them.

    They split on spaces, as documents arrive split (:func:`words`). Nothing else asks
    the index to analyze text: queries are built from :class:`Analyzers` tokens.
    """
    index.register_tokenizer(TEXT_ANALYZER, _analyzer(stem=True, presplit=True))
    index.register_tokenizer(NAME_ANALYZER, _analyzer(stem=False, presplit=True))


_WORD = regex.compile(TOKEN_PATTERN)
_LETTER = regex.compile(r"[\p{L}\p{M}]")
_NUMBER = regex.compile(r"\p{N}")
_WORD_BYTES = bytes(
    c if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c >= 128 else 32 for c in range(256)
)  # ASCII letters and digits stay, other ASCII becomes a space; UTF-8 beyond ASCII is
# classed character by character
_CLASSES = bytes(
    48 if 48 <= c <= 57 else 97 if 65 <= c <= 90 or 97 <= c <= 122 else 128 if c >= 128 else 32
    for c in range(256)
)  # digits -> "0", letters -> "a" (a letter meets a digit where "a0" or "0a" is found),
# bytes beyond ASCII -> 0x80 until their characters are classed
_CLASS_OF: dict[str, bytes] = {}
"""Each character beyond ASCII seen so far -> b"a" (letter or mark), b"0" or b" ": a
few thousand distinct characters in all of PubMed."""
_SHORT = 64  # a name or a MeSH heading: worth checking first whether it is all letters
_FEW = 0.1  # beyond this share of non-ASCII bytes (Cyrillic, CJK), the regex is cheaper


def words(text: str) -> str:
    """The tokens of :data:`TOKEN_PATTERN` in ``text``, separated by spaces (runs of them
    in places), as the index's whitespace tokenizer takes them.

    No regex runs over most text. In its UTF-8 bytes one translation blanks every ASCII
    byte but letters and digits, and another gives each byte its class, where ``a0``
    and ``0a`` are the places a letter meets a digit (``IL6``) and a space goes in. The
    few characters beyond ASCII (a median of 2 in a real PubMed abstract that has any:
    ``±``, ``≥``, ``é``) are classed one by one, once each per process. ~6-9 us an ASCII
    abstract against ~12-25 us for a regex substitution and ~50-100 us for ``findall``.
    """
    if text.isascii():
        if len(text) < _SHORT and text.replace(" ", "").isalpha():
            return text  # "Smith JA", "Humans"
        data = text.encode("ascii")
        return _cut(data.translate(_WORD_BYTES), data.translate(_CLASSES)).decode("ascii")
    data = text.encode("utf-8", "surrogatepass")  # JSON (a BEIR corpus) can hold lone ones
    if len(data) - len(text) > _FEW * len(data):
        return " ".join(_WORD.findall(text))
    blanked = bytearray(data.translate(_WORD_BYTES))
    classes = bytearray(data.translate(_CLASSES))
    at = classes.find(128)  # memchr: a regex scan for the high bytes costs ~10 ns a byte
    while at >= 0:
        lead = data[at]
        size = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        char = data[at : at + size].decode("utf-8", "surrogatepass")
        kind = _CLASS_OF.get(char) or _class_of(char)
        classes[at : at + size] = kind * size
        if kind == b" ":
            blanked[at : at + size] = kind * size
        at = classes.find(128, at + size)
    return _cut(bytes(blanked), bytes(classes)).decode("utf-8", "surrogatepass")


def _class_of(char: str) -> bytes:
    kind = b"a" if _LETTER.match(char) else b"0" if _NUMBER.match(char) else b" "
    _CLASS_OF[char] = kind
    return kind


def _cut(blanked: bytes, classes: bytes) -> bytes:
    """``blanked`` with a space wherever ``classes`` shows a letter meeting a digit (a
    character's bytes share its class, so every cut falls between characters)."""
    cuts = [i + 1 for i in _find_all(classes, b"a0")] + [i + 1 for i in _find_all(classes, b"0a")]
    if not cuts:
        return blanked
    cuts.sort()
    return b" ".join(
        blanked[start:end] for start, end in zip([0, *cuts], [*cuts, len(blanked)], strict=True)
    )


def _find_all(data: bytes, pair: bytes) -> list[int]:
    found = []
    at = data.find(pair)
    while at >= 0:
        found.append(at)
        at = data.find(pair, at + 1)
    return found


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
    sb.add_integer_field(DATE_START, indexed=True, fast=True)
    sb.add_integer_field(DATE_END, indexed=True, fast=True)
    sb.add_integer_field(ELECTRONIC_DATE, indexed=True)
    for name in RECORD_DATE_FIELDS.values():
        sb.add_integer_field(name, indexed=True)
    sb.add_bytes_field(PAYLOAD, stored=True)
    return sb.build()


def exact_key(value: str) -> str:
    """How journals, publication types and languages are compared: ``Filters.accepts``."""
    return value.casefold()


Fields = dict[str, list[Any]]
"""A document's indexed fields as plain data (field -> values): cheap to pickle, so
ingest's parser processes build them and the writer only hands them to tantivy."""


def article_fields(article: Article) -> Fields:
    """The indexed fields of ``article`` (a field is absent when it has no value).

    Lists are built whole rather than appended through a helper: ingest calls this
    once per article in every parser process (~20 values a real record)."""
    fields: Fields = {PMID: [article.pmid]}
    abstract = article.abstract_text
    if article.title:
        title = _split(article.title)
        fields[TITLE] = [title]
        if not abstract:
            fields[TITLE_ALONE] = [title]
    if abstract:
        fields[ABSTRACT] = [_split(abstract)]
    if article.other_abstracts:
        fields[OTHER_ABSTRACT] = [_split(text) for text in article.other_abstracts]
    if article.mesh:
        mesh: list[Any] = []
        major: list[Any] = []
        for heading in article.mesh:
            descriptor = _split(heading.descriptor)
            mesh.append(descriptor)
            mesh.extend(_split(qualifier.name) for qualifier in heading.qualifiers)
            if heading.is_major:
                major.append(descriptor)
        fields[MESH] = mesh
        if major:
            fields[MESH_MAJOR] = major
        fields.update(mesh_heading_fields(article))
    if article.keywords:
        fields[KEYWORDS] = [_split(keyword) for keyword in article.keywords]
    if article.authors:
        names = [_split(author.display) for author in article.authors]
        fields[AUTHORS] = names
        fields[FIRST_AUTHOR] = [names[0]]
        fields[LAST_AUTHOR] = [names[-1]]
        full = [
            _split(f"{a.last_name} {a.fore_name}")
            for a in article.authors
            if a.last_name and a.fore_name
        ]
        if full:
            fields[FULL_AUTHOR] = full
        keys = author_keys(article)
        if keys:
            fields[AUTHOR_KEY] = keys
        places = sorted({p for a in article.authors for p in a.affiliations})
        if places:
            fields[AFFILIATION] = [_split(p) for p in places]
    if article.chemicals or article.supplementary:
        concepts = (*article.chemicals, *article.supplementary)
        fields[SUPPLEMENTARY] = sorted({fk.name_key(c) for c in concepts})
    journals = fk.journal_keys(article)
    if journals:
        fields[JOURNAL_KEY] = sorted(journals)
    types = set(article.publication_types)
    if is_retracted(article):  # a RetractionIn link without the type: --exclude-retracted
        types.add(RETRACTED_TYPE)
    if types:
        fields[PUB_TYPE] = sorted({exact_key(t) for t in types})
    if article.languages:
        fields[LANGUAGE] = sorted({exact_key(lang) for lang in article.languages})
    if article.year is not None:
        fields[YEAR] = [article.year]
    fields.update(other_tag_fields(article))
    fields.update(pubmed_word_fields(article))
    return fields


def pubmed_word_fields(article: Article) -> Fields:
    """:data:`TEXT_WORD`, :data:`JOURNAL_WORDS`, :data:`REGISTRY` and the record dates:
    what PubMed's ``[tw]``, ``[all]``, ``[rn]`` and date tags search beyond the fields
    the other tags have (format 6)."""
    out: Fields = {}
    texts = [
        *article.publication_types,
        *article.chemicals,
        *article.supplementary,
        *article.personal_subjects,
        *(a.collective_name for a in article.authors if a.collective_name),
        *article.secondary_sources,
        *(c.note for c in article.corrections if c.note),
    ]
    if texts:
        out[TEXT_WORD] = [_split(text) for text in dict.fromkeys(texts)]
    journals = dict.fromkeys(
        j for j in (article.journal, article.journal_abbrev, article.medline_ta) if j
    )
    if journals:
        out[JOURNAL_WORDS] = [_split(j) for j in journals]
    if article.registry_numbers:
        out[REGISTRY] = sorted({fk.name_key(n) for n in article.registry_numbers})
    if article.record_dates:
        dates = dict(article.record_dates)
        for tag, name in RECORD_DATE_FIELDS.items():
            day = next((dates[s] for s in fk.RECORD_DATES[tag] if s in dates), 0)
            if day:
                out[name] = [day]
    return out


def mesh_heading_fields(article: Article) -> Fields:
    """``[mh]``/``[majr]``/``[sh]`` keys: each heading whole, and ``heading/qualifier``
    for each of its qualifiers (major when the heading or that qualifier is, PubMed's
    ``[majr]`` rule)."""
    every: set[str] = set()
    major: set[str] = set()
    qualifiers: set[str] = set()
    for heading in article.mesh:
        name = fk.name_key(heading.descriptor)
        every.add(name)
        if heading.is_major:
            major.add(name)
        for qualifier in heading.qualifiers:
            sub = fk.name_key(qualifier.name)
            pair = f"{name}/{sub}"
            every.add(pair)
            qualifiers.add(sub)
            if heading.major or qualifier.major:
                major.add(pair)
    out: Fields = {MESH_HEADING: sorted(every)}
    if major:
        out[MESH_MAJOR_HEADING] = sorted(major)
    if qualifiers:
        out[MESH_SUBHEADING] = sorted(qualifiers)
    return out


def other_tag_fields(article: Article) -> Fields:
    """Dates, identifiers, grants and subsets: the fields only field tags search."""
    out: Fields = {}
    span = fk.print_span(article)
    if span is not None:
        out[DATE_START], out[DATE_END] = [span[0]], [span[1]]
    electronic = article.electronic_date and fk.date_span(article.electronic_date)
    if electronic:
        out[ELECTRONIC_DATE] = [electronic[0]]
    ids = sorted({value.strip().casefold() for _, value in article.article_ids if value.strip()})
    if ids:
        out[ARTICLE_ID] = ids
    grants = [
        _split(" ".join(p for p in (g.grant_id, g.acronym, g.agency) if p)) for g in article.grants
    ]
    if grants:
        out[GRANT] = grants
    subsets = fk.subsets(article)
    if subsets:
        out[SUBSET] = subsets
    return out


INITIALS_LONGEST = 4
"""Letters of initials a name search reaches: ``Smith J[au]`` finds ``Smith JABC``."""
FIRST_ROLE = "1 "
LAST_ROLE = "$ "


def author_keys(article: Article) -> list[str]:
    """The :data:`AUTHOR_KEY` terms of ``article``'s authors.

    PubMed's ``Smith J[au]`` finds Smith J, Smith JA and Smith JAB. Searched as a phrase
    of the name and any initials starting with ``j``, that walked the postings of every
    short word starting with ``j`` in the author field: linear in the corpus, ~7.5 s p95
    extrapolated to 40.9M articles (docs/benchmarks-history.md, "Author initials"). As
    one term per prefix of the initials, it reads the postings of that author alone.
    Initials a record lacks come from the fore name (``John Paul`` -> ``JP``).
    """
    out: set[str] = set()
    last = len(article.authors) - 1
    for i, author in enumerate(article.authors):
        if author.collective_name or not author.last_name:
            continue
        initials = author.initials or "".join(w[0] for w in (author.fore_name or "").split())
        name = " ".join(name_tokens(author.last_name))
        letters = "".join(name_tokens(initials))
        if not name or not letters:
            continue
        for n in range(1, min(len(letters), INITIALS_LONGEST) + 1):
            key = f"{name} {letters[:n]}"
            out.add(key)
            if i == 0:
                out.add(FIRST_ROLE + key)
            if i == last:
                out.add(LAST_ROLE + key)
    return sorted(out)


def name_tokens(text: str) -> list[str]:
    """``text`` as the name analyzer indexes it (lower-cased, ASCII-folded words), so a
    key built here is the key a query builds from its tokens. ASCII text (most names)
    is folded in Python: the analyzer would change nothing but the case."""
    split = _split(text)
    if split.isascii():
        return split.lower().split()
    return list(_name_analyzer().analyze(split))


@functools.cache
def _name_analyzer() -> Any:
    return _analyzer(stem=False, presplit=True)


def _split(text: str) -> str:
    return words(normalize_text(text))


Doc = tuple[int, str]
"""A lexical document as it travels from a parser to the writer: its PMID and its
fields as JSON, which the writer hands to tantivy's ``add_json`` (parsed in Rust)."""


def document(fields: Fields) -> Doc:
    """``fields`` ready for the writer. Why JSON: ``Document.from_dict`` and unpickling
    the fields' lists cost the single writer thread ~10 us an article more than
    ``add_json`` of a string and unpickling it (BENCHMARKS.md, "Ingest"); the parser
    process, one of many, pays ~2 us for ``orjson.dumps``."""
    return fields[PMID][0], orjson.dumps(fields).decode()


def payload_document(payload: str) -> Any:
    doc = tantivy.Document()
    doc.add_text(META, META_COMMIT)
    doc.add_bytes(PAYLOAD, payload.encode())
    return doc
