"""PubMed XML for tests and benchmarks: records written by hand, and synthetic corpora.

``article_xml`` and ``pubmed_file`` write the few records a test spells out field by
field (baseline and update files, ``DeleteCitation``, gzip; ``truncated_gzip`` is what an
interrupted download leaves). The rest of this module writes corpora of any size.

Real baseline files cannot be downloaded here, and the benchmarks need corpora of any
size with realistic term statistics, so this writes ``PubmedArticleSet`` XML whose
words follow a Zipf law over a vocabulary of pronounceable pseudo-words. Everything is
deterministic by ``seed``, and the XML is written article by article, so a 30K-article
file never exists in memory.

``synthetic_documents`` yields the same (pmid, title, abstract) triples the XML holds,
and ``to_article`` the records, for benchmarks that index text without parsing XML;
``fast_articles`` draws title-and-abstract records of the same law in bulk. The
abstract is formatted like ``Article.abstract_text`` (``LABEL: text`` per structured
section, one per line).

    python -m benchmarks.synth OUT.xml.gz 30000 --seed 0

The tests import this module too (pytest puts the repository on ``sys.path``), so that a
test and a benchmark that need the same XML write it the same way.
"""

from __future__ import annotations

import argparse
import gzip as gzip_module
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape

import numpy as np

from medsearch.records import AbstractSection, Article, Author, MeshHeading, PubDate

ZIPF_EXPONENT = 1.07  # fitted to word frequencies of English/biomedical abstracts
LABELS = ("BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS")
PUBLICATION_TYPES = (
    ("D016428", "Journal Article"),
    ("D016454", "Review"),
    ("D016449", "Randomized Controlled Trial"),
    ("D017418", "Meta-Analysis"),
    ("D002363", "Case Reports"),
)
LANGUAGES = ("eng",) * 9 + ("fre",)
_ONSETS = (*"bcdfghklmnprstvz", *["br", "ch", "cl", "dr", "gr", "ph", "pr", "st", "th", "tr"])
_VOWELS = ("a", "e", "i", "o", "u", "ae", "io", "ou")
_CODAS = ("", "", "", "n", "r", "s", "l", "x", "m", "t")


def article_xml(
    pmid: int,
    title: str,
    abstract: str = "",
    *,
    year: int = 2020,
    journal: str = "Journal of Testing",
    abbrev: str = "J Test",
    version: int = 1,
    pub_type: str = "Journal Article",
    pub_types: Sequence[str] = (),
    authors: Sequence[tuple[str, str]] = (("Doe", "J"),),
    mesh: Sequence[tuple[str, bool, bool]] = (),
    languages: Sequence[str] = ("eng",),
    doi: str | None = "",
    pmcid: str | None = None,
) -> str:
    """One ``PubmedArticle``. ``authors``: (last name, initials); ``mesh``: (descriptor,
    descriptor is major, a qualifier is major); ``doi`` "" means ``10.5555/test.PMID``."""
    abstract_xml = (
        f"<Abstract><AbstractText>{escape(abstract)}</AbstractText></Abstract>" if abstract else ""
    )
    author_xml = "".join(
        f"<Author><LastName>{escape(last)}</LastName><Initials>{escape(initials)}</Initials>"
        "</Author>"
        for last, initials in authors
    )
    types_xml = "".join(
        f"<PublicationType>{escape(t)}</PublicationType>" for t in (pub_types or (pub_type,))
    )
    mesh_xml = "".join(
        f'<MeshHeading><DescriptorName MajorTopicYN="{"Y" if major else "N"}">{escape(name)}'
        f'</DescriptorName><QualifierName MajorTopicYN="{"Y" if qualifier else "N"}">'
        "therapy</QualifierName></MeshHeading>"
        for name, major, qualifier in mesh
    )
    ids = [("pubmed", str(pmid))]
    if doi is not None:
        ids.append(("doi", doi or f"10.5555/test.{pmid}"))
    if pmcid:
        ids.append(("pmc", pmcid))
    ids_xml = "".join(f'<ArticleId IdType="{k}">{escape(v)}</ArticleId>' for k, v in ids)
    return f"""
<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM">
    <PMID Version="{version}">{pmid}</PMID>
    <Article PubModel="Print">
      <Journal>
        <JournalIssue CitedMedium="Print"><Volume>1</Volume><Issue>2</Issue>
          <PubDate><Year>{year}</Year><Month>Mar</Month></PubDate></JournalIssue>
        <Title>{escape(journal)}</Title><ISOAbbreviation>{escape(abbrev)}</ISOAbbreviation>
      </Journal>
      <ArticleTitle>{escape(title)}</ArticleTitle>
      {abstract_xml}
      <AuthorList>{author_xml}</AuthorList>
      {"".join(f"<Language>{escape(lang)}</Language>" for lang in languages)}
      <PublicationTypeList>{types_xml}</PublicationTypeList>
    </Article>
    <MeshHeadingList>{mesh_xml}</MeshHeadingList>
  </MedlineCitation>
  <PubmedData><ArticleIdList>{ids_xml}</ArticleIdList></PubmedData>
</PubmedArticle>"""


def pubmed_file(
    path: Path, articles: Iterable[str], deletions: Iterable[int] = (), *, gz: bool = False
) -> Path:
    """A ``PubmedArticleSet`` of ``articles`` (``article_xml`` strings), then a
    ``DeleteCitation`` of ``deletions`` when there are any, as an update file ends."""
    body = "".join(articles)
    dels = list(deletions)
    if dels:
        body += (
            "<DeleteCitation>"
            + "".join(f'<PMID Version="1">{p}</PMID>' for p in dels)
            + "</DeleteCitation>"
        )
    text = (
        f'<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>{body}\n</PubmedArticleSet>\n'
    )
    data = text.encode()
    if gz:
        path.write_bytes(gzip_module.compress(data))
    else:
        path.write_bytes(data)
    return path


def truncated_gzip(path: Path, source: bytes) -> Path:
    """A .gz cut in half: what an interrupted download leaves behind."""
    packed = gzip_module.compress(source)
    path.write_bytes(packed[: len(packed) // 2])
    return path


@dataclass(frozen=True, slots=True)
class SyntheticArticle:
    """One generated citation: what the XML writer and ``synthetic_documents`` share."""

    pmid: int
    title: str
    sections: tuple[tuple[str | None, str], ...]  # (label, text); label None if plain
    authors: tuple[tuple[str, str, str], ...]  # (last name, fore name, initials)
    journal: tuple[str, str, str]  # (title, ISO abbreviation, ISSN)
    year: int
    month: int
    mesh: tuple[tuple[str, str, bool], ...]  # (descriptor, UI, major)
    keywords: tuple[str, ...]
    publication_type: tuple[str, str]  # (UI, name)
    language: str

    @property
    def abstract(self) -> str:
        return "\n".join(f"{label}: {text}" if label else text for label, text in self.sections)


def pseudo_vocabulary(size: int, seed: int = 0) -> list[str]:
    """``size`` distinct lower-case pseudo-words; the list order is the Zipf rank."""
    rng = np.random.default_rng(seed)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        batch = max(1_000, 2 * (size - len(words)))
        syllables = rng.integers(1, 5, size=batch)
        onsets = rng.integers(len(_ONSETS), size=(batch, 4))
        vowels = rng.integers(len(_VOWELS), size=(batch, 4))
        codas = rng.integers(len(_CODAS), size=batch)
        for n, onset, vowel, coda in zip(syllables, onsets, vowels, codas, strict=True):
            word = "".join(_ONSETS[onset[k]] + _VOWELS[vowel[k]] for k in range(n)) + _CODAS[coda]
            if word not in seen:
                seen.add(word)
                words.append(word)
                if len(words) == size:
                    break
    words.sort(key=len)  # as in real text, the most frequent words are the short ones
    return words


class _Generator:
    """Draws articles one at a time from a seeded generator."""

    def __init__(self, seed: int, vocab_size: int, words_per_doc: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.vocab = pseudo_vocabulary(vocab_size, seed)
        weights = 1.0 / np.arange(1, vocab_size + 1, dtype=np.float64) ** ZIPF_EXPONENT
        self.cdf = np.cumsum(weights / weights.sum())
        self.words_per_doc = words_per_doc
        names = pseudo_vocabulary(2_000, seed + 1)
        self.names = [n.capitalize() for n in names]
        self.journals = [self._journal(i, names) for i in range(60)]
        self.descriptors = [
            (f"{names[i].capitalize()} {names[i + 1]}", f"D{900_000 + i:06d}") for i in range(400)
        ]

    @staticmethod
    def _journal(i: int, names: list[str]) -> tuple[str, str, str]:
        word = names[1_000 + i].capitalize()
        return (f"Journal of {word} research", f"J {word[:5]} Res", f"{5000 + i:04d}-{i:04d}")

    def words(self, n: int) -> list[str]:
        ranks = np.searchsorted(self.cdf, self.rng.random(n))
        vocab = self.vocab
        return [vocab[min(r, len(vocab) - 1)] for r in ranks.tolist()]

    def sentences(self, n_words: int) -> str:
        """Words grouped into capitalised sentences of 8-25 words."""
        words = self.words(n_words)
        out: list[str] = []
        i = 0
        while i < len(words):
            length = int(self.rng.integers(8, 26))
            chunk = words[i : i + length]
            out.append(chunk[0].capitalize() + " " + " ".join(chunk[1:]) + ".")
            i += length
        return " ".join(s.replace(" .", ".") for s in out)

    def article(self, pmid: int) -> SyntheticArticle:
        rng = self.rng
        title_words = self.words(int(rng.integers(8, 17)))
        title = title_words[0].capitalize() + " " + " ".join(title_words[1:]) + "."
        n_words = max(20, int(rng.normal(self.words_per_doc, self.words_per_doc * 0.25)))
        sections: tuple[tuple[str | None, str], ...]
        if rng.random() < 0.3:
            share = n_words // len(LABELS)
            sections = tuple((label, self.sentences(share)) for label in LABELS)
        elif rng.random() < 0.05:
            sections = ()  # about 5% of citations have no abstract, as in PubMed
        else:
            sections = ((None, self.sentences(n_words)),)
        authors = tuple(self._author() for _ in range(int(rng.integers(1, 9))))
        n_mesh = int(rng.integers(2, 7))
        mesh = tuple(
            (*self.descriptors[int(i)], bool(rng.random() < 0.3))
            for i in rng.choice(len(self.descriptors), n_mesh, replace=False)
        )
        return SyntheticArticle(
            pmid=pmid,
            title=title,
            sections=sections,
            authors=authors,
            journal=self.journals[int(rng.integers(len(self.journals)))],
            year=int(rng.integers(1950, 2026)),
            month=int(rng.integers(1, 13)),
            mesh=mesh,
            keywords=tuple(self.words(int(rng.integers(0, 6)))),
            publication_type=PUBLICATION_TYPES[int(rng.integers(len(PUBLICATION_TYPES)))],
            language=LANGUAGES[int(rng.integers(len(LANGUAGES)))],
        )

    def _author(self) -> tuple[str, str, str]:
        last = self.names[int(self.rng.integers(len(self.names)))]
        fore = self.names[int(self.rng.integers(len(self.names)))]
        middle = "" if self.rng.random() < 0.5 else "ABCDEFGHJKLMNPRSTW"[int(self.rng.integers(18))]
        return (last, f"{fore} {middle}".strip(), fore[0] + middle)


def synthetic_articles(
    n: int,
    seed: int = 0,
    *,
    start_pmid: int = 1,
    words_per_doc: int = 220,
    vocab_size: int = 50_000,
) -> Iterator[SyntheticArticle]:
    """``n`` articles with consecutive PMIDs from ``start_pmid``, generated lazily."""
    generator = _Generator(seed, vocab_size, words_per_doc)
    for offset in range(n):
        yield generator.article(start_pmid + offset)


def synthetic_documents(
    n: int,
    seed: int = 0,
    *,
    start_pmid: int = 1,
    words_per_doc: int = 220,
    vocab_size: int = 50_000,
) -> Iterator[tuple[int, str, str]]:
    """``(pmid, title, abstract)`` for the same articles ``write_synthetic_pubmed`` writes."""
    for article in synthetic_articles(
        n, seed, start_pmid=start_pmid, words_per_doc=words_per_doc, vocab_size=vocab_size
    ):
        yield article.pmid, article.title, article.abstract


def to_article(s: SyntheticArticle) -> Article:
    """The record a parser would make of ``s``, for benchmarks that index without XML."""
    return Article(
        pmid=s.pmid,
        title=s.title,
        abstract=tuple(AbstractSection(text, label) for label, text in s.sections),
        authors=tuple(Author(last, fore, initials) for last, fore, initials in s.authors),
        journal=s.journal[0],
        journal_abbrev=s.journal[1],
        pub_date=PubDate(s.year, s.month),
        mesh=tuple(MeshHeading(name, ui, major) for name, ui, major in s.mesh),
        keywords=s.keywords,
        publication_types=(s.publication_type[1],),
        languages=(s.language,),
    )


def fast_articles(
    n: int, seed: int, *, vocab_size: int = 50_000, batch: int = 10_000
) -> Iterator[Article]:
    """Title + abstract only, drawn in bulk: ~20x faster than ``synthetic_articles`` for
    runs of millions of documents.

    Same vocabulary and Zipf law as ``synthetic_articles`` (so the query classes mean the
    same), none of its metadata; drawn ``batch`` documents at a time.
    """
    vocab = np.array(pseudo_vocabulary(vocab_size, seed), dtype=object)
    weights = 1.0 / np.arange(1, vocab_size + 1, dtype=np.float64) ** ZIPF_EXPONENT
    cdf = np.cumsum(weights / weights.sum())
    rng = np.random.default_rng(seed)
    for start in range(0, n, batch):
        size = min(batch, n - start)
        lengths = np.maximum(20, rng.normal(220, 55, size).astype(int)) + 12
        words = vocab[np.minimum(np.searchsorted(cdf, rng.random(lengths.sum())), vocab_size - 1)]
        offset = 0
        for i, length in enumerate(lengths.tolist()):
            doc = words[offset : offset + length]
            offset += length
            yield Article(
                pmid=start + i + 1,
                title=" ".join(doc[:12]),
                abstract=(AbstractSection(" ".join(doc[12:])),),
                pub_date=PubDate(1950 + (start + i) % 76),
            )


def write_synthetic_pubmed(
    path: Path,
    n_articles: int,
    *,
    start_pmid: int = 1,
    seed: int = 0,
    words_per_doc: int = 220,
    vocab_size: int = 50_000,
    gzip: bool = False,
) -> None:
    """Write a ``PubmedArticleSet`` file of ``n_articles`` synthetic citations, streaming."""
    with _open_text(Path(path), gzip) as stream:
        stream.write(
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN"'
            ' "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
            "<PubmedArticleSet>\n"
        )
        articles = synthetic_articles(
            n_articles,
            seed,
            start_pmid=start_pmid,
            words_per_doc=words_per_doc,
            vocab_size=vocab_size,
        )
        for article in articles:
            stream.write(synthetic_article_xml(article))
        stream.write("</PubmedArticleSet>\n")


def _open_text(path: Path, gzip: bool) -> TextIO:
    if gzip:
        return gzip_module.open(path, "wt", encoding="utf-8", compresslevel=6)
    return path.open("w", encoding="utf-8")


def synthetic_article_xml(a: SyntheticArticle) -> str:
    """One synthetic ``PubmedArticle`` element in baseline layout, on one line."""
    journal, iso, issn = (escape(x) for x in a.journal)
    if a.sections:
        parts = "".join(
            f'<AbstractText Label="{label}" NlmCategory="{label}">{escape(text)}</AbstractText>'
            if label
            else f"<AbstractText>{escape(text)}</AbstractText>"
            for label, text in a.sections
        )
        abstract = f"<Abstract>{parts}</Abstract>"
    else:
        abstract = ""
    authors = "".join(
        f'<Author ValidYN="Y"><LastName>{last}</LastName><ForeName>{fore}</ForeName>'
        f"<Initials>{initials}</Initials><AffiliationInfo><Affiliation>Department of "
        f"{last} studies, {fore} University.</Affiliation></AffiliationInfo></Author>"
        for last, fore, initials in a.authors
    )
    mesh = "".join(
        f'<MeshHeading><DescriptorName UI="{ui}" MajorTopicYN="{"Y" if major else "N"}">'
        f"{name}</DescriptorName></MeshHeading>"
        for name, ui, major in a.mesh
    )
    keywords = "".join(f'<Keyword MajorTopicYN="N">{k}</Keyword>' for k in a.keywords)
    keyword_list = f'<KeywordList Owner="NOTNLM">{keywords}</KeywordList>' if keywords else ""
    doi = f"10.5555/synth.{a.pmid}"
    type_ui, type_name = a.publication_type
    return (
        f'<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">'
        f'<PMID Version="1">{a.pmid}</PMID><Article PubModel="Print"><Journal>'
        f'<ISSN IssnType="Print">{issn}</ISSN><JournalIssue CitedMedium="Print">'
        f"<Volume>{a.pmid % 97 + 1}</Volume><Issue>{a.pmid % 12 + 1}</Issue>"
        f"<PubDate><Year>{a.year}</Year><Month>{a.month:02d}</Month></PubDate></JournalIssue>"
        f"<Title>{journal}</Title><ISOAbbreviation>{iso}</ISOAbbreviation></Journal>"
        f"<ArticleTitle>{escape(a.title)}</ArticleTitle>"
        f"<Pagination><MedlinePgn>{a.pmid % 900 + 1}-{a.pmid % 900 + 9}</MedlinePgn></Pagination>"
        f'<ELocationID EIdType="doi" ValidYN="Y">{doi}</ELocationID>{abstract}'
        f'<AuthorList CompleteYN="Y">{authors}</AuthorList><Language>{a.language}</Language>'
        f'<PublicationTypeList><PublicationType UI="{type_ui}">{type_name}</PublicationType>'
        f"</PublicationTypeList></Article><MedlineJournalInfo><Country>United States</Country>"
        f"<MedlineTA>{iso}</MedlineTA></MedlineJournalInfo>"
        f"<MeshHeadingList>{mesh}</MeshHeadingList>{keyword_list}</MedlineCitation>"
        f'<PubmedData><History><PubMedPubDate PubStatus="pubmed"><Year>{a.year}</Year>'
        f"<Month>{a.month}</Month><Day>1</Day></PubMedPubDate></History>"
        f"<PublicationStatus>ppublish</PublicationStatus><ArticleIdList>"
        f'<ArticleId IdType="pubmed">{a.pmid}</ArticleId><ArticleId IdType="doi">{doi}</ArticleId>'
        f"</ArticleIdList></PubmedData></PubmedArticle>\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="output file (.xml or .xml.gz)")
    parser.add_argument("n", type=int, help="number of articles")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-pmid", type=int, default=1)
    parser.add_argument("--words-per-doc", type=int, default=220)
    parser.add_argument("--vocab-size", type=int, default=50_000)
    parser.add_argument("--gzip", action="store_true", help="gzip (default: by .gz suffix)")
    args = parser.parse_args(argv)
    write_synthetic_pubmed(
        args.out,
        args.n,
        start_pmid=args.start_pmid,
        seed=args.seed,
        words_per_doc=args.words_per_doc,
        vocab_size=args.vocab_size,
        gzip=args.gzip or args.out.suffix == ".gz",
    )


if __name__ == "__main__":
    main()
