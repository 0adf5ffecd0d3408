"""Stored records back as PubMed XML: ``PubmedArticleSet`` as efetch returns it.

The store keeps what medsearch reads of a record (:class:`~medsearch.records.Article`),
not the XML, so the XML is rebuilt element by element in the places NCBI's DTD puts
them, and written so that :mod:`ingest.pubmed_xml` reads every field back the same: an
efetch of a home re-ingests into a new home with identical ``show --json`` (the
round-trip test holds it): the record dates (``History``, ``DateCompleted``,
``DateRevised``), other abstracts, registry numbers, personal names as subject and data
bank accession numbers included. What the store never kept (inline markup, the citation
text of references in records stored before it was kept, a journal's country, which
chemical a registry number belonged to) is not invented.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lxml import etree

from medsearch.records import MONTHS, Article, Author, PubDate

Element = etree._Element

DOCTYPE = (
    '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN"'
    ' "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">'
)


def _add(parent: Element, tag: str, text: str | None = None, **attrs: str) -> Element:
    child = etree.SubElement(parent, tag, attrs)
    if text is not None:
        child.text = text
    return child


def _date(parent: Element, tag: str, date: PubDate, **attrs: str) -> Element:
    elem = _add(parent, tag, **attrs)
    if date.raw:
        _add(elem, "MedlineDate", date.raw)
        return elem
    if date.year is not None:
        _add(elem, "Year", str(date.year))
    if date.month:
        _add(elem, "Month", MONTHS[date.month - 1].capitalize())
        if date.day:
            _add(elem, "Day", f"{date.day:02d}")
    elif date.season:
        _add(elem, "Season", date.season)
    return elem


RECORD_DATE_ELEMENTS = {"datecompleted": "DateCompleted", "daterevised": "DateRevised"}
"""The record dates kept under these statuses come from ``MedlineCitation``'s own
elements, not ``PubmedData``'s ``History`` (ingest.pubmed_xml._record_dates)."""


def _ymd(parent: Element, tag: str, day: int, **attrs: str) -> None:
    """A ``YYYYMMDD`` record date as the DTD writes it: ``Year``, ``Month``, ``Day``."""
    elem = _add(parent, tag, **attrs)
    _add(elem, "Year", f"{day // 10000:04d}")
    _add(elem, "Month", f"{day // 100 % 100:02d}")
    _add(elem, "Day", f"{day % 100:02d}")


def _history(parent: Element, article: Article) -> None:
    dates = [(s, d) for s, d in article.record_dates if s not in RECORD_DATE_ELEMENTS]
    if not dates:
        return
    history = _add(parent, "History")
    for status, day in dates:
        _ymd(history, "PubMedPubDate", day, PubStatus=status)


def _authors(parent: Element, authors: Sequence[Author]) -> None:
    if not authors:
        return
    author_list = _add(parent, "AuthorList", CompleteYN="Y")
    for author in authors:
        elem = _add(author_list, "Author", ValidYN="Y")
        if author.collective_name and not (author.last_name or author.fore_name):
            _add(elem, "CollectiveName", author.collective_name)
        else:
            if author.last_name:
                _add(elem, "LastName", author.last_name)
            if author.fore_name:
                _add(elem, "ForeName", author.fore_name)
            if author.initials:
                _add(elem, "Initials", author.initials)
            if author.collective_name:
                _add(elem, "CollectiveName", author.collective_name)
        for affiliation in author.affiliations:
            _add(_add(elem, "AffiliationInfo"), "Affiliation", affiliation)


def _abstract(parent: Element, article: Article) -> None:
    if not article.abstract:
        return
    abstract = _add(parent, "Abstract")
    for section in article.abstract:
        attrs = {}
        if section.label:
            attrs["Label"] = section.label
        if section.category:
            attrs["NlmCategory"] = section.category
        _add(abstract, "AbstractText", section.text, **attrs)


def _article_ids(parent: Element, article: Article) -> None:
    ids = _add(parent, "ArticleIdList")
    for kind, value in article.article_ids:  # as stored: a record may carry no pubmed id
        _add(ids, "ArticleId", value, IdType=kind)


def _references(parent: Element, article: Article) -> None:
    if not article.references:
        return
    reference_list = _add(parent, "ReferenceList")
    for ref in article.references:
        reference = _add(reference_list, "Reference")
        fallback = f"doi: {ref.doi}" if ref.doi else f"PMID: {ref.pmid}"
        _add(reference, "Citation", ref.citation or fallback)
        ids = _add(reference, "ArticleIdList")
        if ref.pmid:
            _add(ids, "ArticleId", str(ref.pmid), IdType="pubmed")
        if ref.doi:
            _add(ids, "ArticleId", ref.doi, IdType="doi")


def _journal(parent: Element, article: Article) -> None:
    journal = _add(parent, "Journal")
    if article.issn:
        _add(journal, "ISSN", article.issn, IssnType="Print")
    issue = _add(journal, "JournalIssue", CitedMedium="Internet")
    if article.volume:
        _add(issue, "Volume", article.volume)
    if article.issue:
        _add(issue, "Issue", article.issue)
    _date(issue, "PubDate", article.pub_date)
    if article.journal:
        _add(journal, "Title", article.journal)
    if article.journal_abbrev:
        _add(journal, "ISOAbbreviation", article.journal_abbrev)


def _citation(root: Element, article: Article) -> None:
    pubmed_article = _add(root, "PubmedArticle")
    attrs = {"Status": article.status} if article.status else {}
    citation = _add(pubmed_article, "MedlineCitation", Owner="NLM", **attrs)
    _add(citation, "PMID", str(article.pmid), Version=str(article.version))
    for status, tag in RECORD_DATE_ELEMENTS.items():
        for kind, day in article.record_dates:
            if kind == status:
                _ymd(citation, tag, day)
                break
    body = _add(citation, "Article", PubModel="Print")
    _journal(body, article)
    _add(body, "ArticleTitle", article.title)
    if article.pages:
        _add(_add(body, "Pagination"), "MedlinePgn", article.pages)
    _abstract(body, article)
    _authors(body, article.authors)
    for language in article.languages:
        _add(body, "Language", language)
    if article.secondary_sources:
        banks = _add(body, "DataBankList", CompleteYN="Y")
        for source in article.secondary_sources:
            name, _, number = source.rpartition("/")
            bank = _add(banks, "DataBank")
            _add(bank, "DataBankName", name)
            _add(_add(bank, "AccessionNumberList"), "AccessionNumber", number)
    # DataBankList before GrantList: the DTD's order
    if article.grants:
        grants = _add(body, "GrantList", CompleteYN="Y")
        for grant in article.grants:
            elem = _add(grants, "Grant")
            for tag, value in (
                ("GrantID", grant.grant_id),
                ("Acronym", grant.acronym),
                ("Agency", grant.agency),
                ("Country", grant.country),
            ):
                if value is not None:
                    _add(elem, tag, value)
    types = _add(body, "PublicationTypeList")
    for kind in article.publication_types:
        _add(types, "PublicationType", kind)
    if article.electronic_date is not None:
        _date(body, "ArticleDate", article.electronic_date, DateType="Electronic")
    info = _add(citation, "MedlineJournalInfo")
    if article.medline_ta:
        _add(info, "MedlineTA", article.medline_ta)
    if len(article.issns) > 1:
        _add(info, "ISSNLinking", article.issns[1])
    numbers = list(article.registry_numbers)  # in order; which chemical had which is lost
    if article.chemicals or numbers:
        chemicals = _add(citation, "ChemicalList")
        names = list(article.chemicals) + [""] * max(0, len(numbers) - len(article.chemicals))
        for i, name in enumerate(names):
            chemical = _add(chemicals, "Chemical")
            _add(chemical, "RegistryNumber", numbers[i] if i < len(numbers) else "0")
            _add(chemical, "NameOfSubstance", name)
    if article.supplementary:
        suppl = _add(citation, "SupplMeshList")
        for name in article.supplementary:
            _add(suppl, "SupplMeshName", name, Type="Protocol")
    if article.corrections:
        links = _add(citation, "CommentsCorrectionsList")
        for link in article.corrections:
            elem = _add(links, "CommentsCorrections", RefType=link.ref_type)
            _add(elem, "RefSource", link.source or "")
            if link.pmid is not None:
                _add(elem, "PMID", str(link.pmid), Version="1")
            if link.note:
                _add(elem, "Note", link.note)
    if article.mesh:
        headings = _add(citation, "MeshHeadingList")
        for heading in article.mesh:
            elem = _add(headings, "MeshHeading")
            _add(
                elem,
                "DescriptorName",
                heading.descriptor,
                UI=heading.ui or "",
                MajorTopicYN="Y" if heading.major else "N",
            )
            for q in heading.qualifiers:
                _add(
                    elem,
                    "QualifierName",
                    q.name,
                    UI=q.ui or "",
                    MajorTopicYN="Y" if q.major else "N",
                )
    if article.personal_subjects:
        subjects = _add(citation, "PersonalNameSubjectList")
        for name in article.personal_subjects:  # kept as one "Last Fore" string
            _add(_add(subjects, "PersonalNameSubject"), "LastName", name)
    for text in article.other_abstracts:
        other = _add(citation, "OtherAbstract", Type="Publisher")
        _add(other, "AbstractText", text)
    if article.keywords:
        keywords = _add(citation, "KeywordList", Owner="NOTNLM")
        for word in article.keywords:
            _add(keywords, "Keyword", word, MajorTopicYN="N")
    data = _add(pubmed_article, "PubmedData")
    _history(data, article)
    _add(data, "PublicationStatus", "ppublish")
    _article_ids(data, article)
    _references(data, article)


def _book(root: Element, article: Article) -> None:
    """A ``PubmedBookArticle``: the title is the chapter's and ``journal`` the book's
    (a whole book: the title is the book's own), as :mod:`ingest.pubmed_xml` reads them."""
    book_article = _add(root, "PubmedBookArticle")
    doc = _add(book_article, "BookDocument")
    _add(doc, "PMID", str(article.pmid), Version=str(article.version))
    _article_ids(doc, article)
    book = _add(doc, "Book")
    _add(_add(book, "Publisher"), "PublisherName", "")
    _add(book, "BookTitle", article.journal if article.journal else article.title)
    _date(book, "PubDate", article.pub_date)
    if article.journal:
        _add(doc, "ArticleTitle", article.title)
    for language in article.languages:
        _add(doc, "Language", language)
    _authors(doc, article.authors)
    for kind in article.publication_types:
        _add(doc, "PublicationType", kind)
    _abstract(doc, article)
    if article.keywords:
        keywords = _add(doc, "KeywordList", Owner="NOTNLM")
        for word in article.keywords:
            _add(keywords, "Keyword", word, MajorTopicYN="N")
    _references(doc, article)
    data = _add(book_article, "PubmedBookData")
    _add(data, "PublicationStatus", "ppublish")


def article_set(articles: Iterable[Article]) -> bytes:
    """A whole ``PubmedArticleSet`` document (declaration and DOCTYPE included)."""
    root = etree.Element("PubmedArticleSet")
    for article in articles:
        (_book if article.kind == "book" else _citation)(root, article)
    body = etree.tostring(root, encoding="unicode", pretty_print=True)
    return f'<?xml version="1.0" ?>\n{DOCTYPE}\n{body}'.encode()
