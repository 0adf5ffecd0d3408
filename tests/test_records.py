"""Records round-trip through the dict/JSON form the store keeps and --json prints."""

from __future__ import annotations

from dataclasses import asdict

from hypothesis import given
from hypothesis import strategies as st

from medsearch.records import (
    AbstractSection,
    Article,
    Author,
    Filters,
    MeshHeading,
    PubDate,
    Qualifier,
)

text = st.text(max_size=30)
opt = st.none() | text
articles = st.builds(
    Article,
    pmid=st.integers(1, 2**40),
    version=st.integers(1, 5),
    title=text,
    abstract=st.lists(
        st.builds(AbstractSection, text=text, label=opt, category=opt), max_size=3
    ).map(tuple),
    authors=st.lists(
        st.builds(
            Author,
            last_name=opt,
            fore_name=opt,
            initials=opt,
            collective_name=opt,
            affiliations=st.lists(text, max_size=2).map(tuple),
        ),
        max_size=3,
    ).map(tuple),
    journal=text,
    pub_date=st.builds(
        PubDate, year=st.none() | st.integers(1800, 2030), month=st.none() | st.integers(1, 12)
    ),
    mesh=st.lists(
        st.builds(
            MeshHeading,
            descriptor=text,
            ui=opt,
            major=st.booleans(),
            qualifiers=st.lists(
                st.builds(Qualifier, name=text, ui=opt, major=st.booleans()), max_size=2
            ).map(tuple),
        ),
        max_size=3,
    ).map(tuple),
    keywords=st.lists(text, max_size=3).map(tuple),
    article_ids=st.lists(st.tuples(text, text), max_size=3).map(tuple),
)


@given(articles)
def test_json_round_trip_is_lossless(article: Article) -> None:
    assert Article.from_json(article.to_json()) == article


@given(articles)
def test_hand_written_to_dict_matches_asdict(article: Article) -> None:
    expected = asdict(article)
    got = article.to_dict()
    normalised = {k: (list(v) if isinstance(v, tuple) else v) for k, v in expected.items()}
    assert Article.from_dict(got) == Article.from_dict(normalised)
    assert set(got) == set(expected)


def test_content_hash_changes_with_text_only() -> None:
    a = Article(pmid=1, title="T", abstract=(AbstractSection("x"),))
    assert (
        a.content_hash
        == Article(pmid=1, title="T", abstract=(AbstractSection("x"),), version=2).content_hash
    )
    assert (
        a.content_hash != Article(pmid=1, title="T2", abstract=(AbstractSection("x"),)).content_hash
    )


def test_filters_merge_takes_the_tighter_year_bounds() -> None:
    merged = Filters(year_from=2000, year_to=2020).merge(Filters(year_from=2010, year_to=2030))
    assert (merged.year_from, merged.year_to) == (2010, 2020)
    article = Article(
        pmid=1,
        journal="Nature",
        journal_abbrev="Nature",
        pub_date=PubDate(year=2015),
        publication_types=("Review",),
    )
    assert merged.accepts(article)
    assert not Filters(journals=("Science",)).accepts(article)
    assert Filters(publication_types=("review",)).accepts(article)
