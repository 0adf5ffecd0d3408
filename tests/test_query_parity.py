"""PubMed parity: real queries over every real record, answered as PubMed would.

Every PubMed XML file in ``../shared/data/pubmed`` is ingested once. Each query's
expected set is computed here from the XML itself (``pubmed_reference``: ElementTree,
one small predicate per field tag, written from https://pubmed.ncbi.nlm.nih.gov/help/),
never from our parser, records or index. The real Searcher must then return exactly
that set, count it in ``total``, and do so in lexical, dense and hybrid modes (the
modes only order a set query's set).

Known, deliberate differences from PubMed are left out of the queries (and listed in
docs/query-parity.md):

- MeSH explosion needs NLM's MeSH data: headings with narrower ones are asked with
  ``:noexp``, which is PubMed's own way to ask for the heading alone;
- automatic term mapping: untagged words search title, abstract, MeSH terms and
  keywords here, PubMed's every field;
- stemming: text words are stemmed (``cataracts`` finds ``cataract``), so every query
  here is one whose answer no stem changes
  (``test_the_answers_do_not_depend_on_stemming``);
- ``[au]`` reads a last word of one or two letters as initials (``Wang Li`` is Wang
  LI), so two-letter fore names are asked with the comma form.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from itertools import permutations
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED_DATA
from pubmed_reference import Ref, fold, read_corpus, words
from tiny_models import build_tiny_models, write_tiny_config

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.retrieval.searcher import Searcher, open_searcher

pytestmark = pytest.mark.thorough  # ingest, a hundred set computations, vectors: seconds

Pred = Callable[[Ref], bool]
_STEM: list[Callable[[str], str]] = []
"""Set only by the stemming guard: text words compared by their stems."""


_SPLIT: dict[tuple[str, bool], tuple[tuple[str, ...], dict[str, list[int]]]] = {}


def split(text: str) -> tuple[tuple[str, ...], dict[str, list[int]]]:
    """The words of title or abstract text as compared (see :func:`stemmed`), and
    where each occurs; once per text, as a hundred queries read the same records."""
    key = (text, bool(_STEM))
    found = _SPLIT.get(key)
    if found is None:
        tokens = tuple(_STEM[0](w) for w in words(text)) if _STEM else words(text)
        at: dict[str, list[int]] = {}
        for i, token in enumerate(tokens):
            at.setdefault(token, []).append(i)
        found = _SPLIT[key] = (tokens, at)
    return found


def text_words(text: str) -> tuple[str, ...]:
    return split(text)[0]


@contextmanager
def stemmed() -> Iterator[None]:
    """Compare text words by our index's stems, to show that a query's answer does not
    depend on them; expected sets are never computed this way."""
    from functools import cache

    from medsearch.index.lexical.schema import analyzers

    text = analyzers().text

    @cache
    def stem(word: str) -> str:
        return "".join(t.text for t in text.pre_tokenize(word).tokens)

    _STEM.append(stem)
    try:
        yield
    finally:
        _STEM.clear()


def _phrase_in(text: str, phrase: str) -> bool:
    want = text_words(phrase)
    have, at = split(text)
    return any(have[i : i + len(want)] == want for i in at.get(want[0], ()))


def ti(phrase: str) -> Pred:
    return lambda r: _phrase_in(r.title, phrase)


def ab(phrase: str) -> Pred:
    return lambda r: _phrase_in(r.abstract, phrase)


def tiab_texts(r: Ref) -> tuple[str, ...]:
    """PubMed's [tiab] (help page, "Title/Abstract"): title, abstract, other abstracts
    and author keywords."""
    return (r.title, r.abstract, *r.other_abstracts, *r.keywords)


def tw_texts(r: Ref) -> tuple[str, ...]:
    """PubMed's [tw] (help page, "Text Words"): [tiab]'s, MeSH terms and subheadings,
    publication types, substance names, personal names as subject, corporate authors,
    secondary source IDs and comment/correction notes."""
    return (
        *tiab_texts(r),
        *(h.name for h in r.headings),
        *(q for h in r.headings for q, _ in h.qualifiers),
        *r.pub_types,
        *r.substances,
        *r.personal_subjects,
        *r.collective_names,
        *r.databanks,
        *r.comment_notes,
    )


_ISSN = re.compile(r"[0-9]{4}-[0-9]{3}[0-9Xx]")


def all_texts(r: Ref) -> tuple[str, ...]:
    """PubMed's All Fields: [tw]'s, authors (with initials and full names),
    affiliations, grants and journal titles and abbreviations."""
    return (
        *tw_texts(r),
        *(f"{a.last} {a.initials or a.fore}" for a in r.authors),
        *(f"{a.last} {a.fore}" for a in r.authors if a.last and a.fore),
        *(x for a in r.authors for x in a.affiliations),
        *(" ".join(p for p in g if p) for g in r.grants),
        *(n for n in r.journal_names if not _ISSN.fullmatch(n)),
    )


def tiab(phrase: str) -> Pred:
    return lambda r: any(_phrase_in(text, phrase) for text in tiab_texts(r))


def tw(phrase: str) -> Pred:
    return lambda r: any(_phrase_in(text, phrase) for text in tw_texts(r))


def all_fields(phrase: str) -> Pred:
    return lambda r: any(_phrase_in(text, phrase) for text in all_texts(r))


def untagged(phrase: str) -> Pred:
    """What an untagged word searches without MeSH installed: PubMed's All Fields."""
    return all_fields(phrase)


def tiab_prefix(phrase: str) -> Pred:
    """``"a b*"[tiab]``: the phrase in the title or abstract, its last word any word
    starting with what was typed."""
    *start, stem = words(phrase)
    head = tuple(start)

    def holds(r: Ref) -> bool:
        for text in tiab_texts(r):
            have = words(text)
            for i in range(len(have) - len(head)):
                if have[i : i + len(head)] == head and have[i + len(head)].startswith(stem):
                    return True
        return False

    return holds


def near(field: str, phrase: str, gap: int) -> Pred:
    """``"a b c"[field:~gap]``: every word in one field, in some order with at most
    ``gap`` words between neighbours (PubMed help, "Proximity searching")."""

    def holds(r: Ref) -> bool:
        wanted = text_words(phrase)
        texts = {
            "ti": [r.title],
            "tiab": list(tiab_texts(r)),
            "ad": [x for a in r.authors for x in a.affiliations],
        }[field]
        for text in texts:
            at = split(text)[1]
            if any(w not in at for w in wanted):
                continue
            for order in permutations(wanted):
                ends = set(at[order[0]])
                for word in order[1:]:
                    ends = {j for j in at[word] if any(0 < j - i <= gap + 1 for i in ends)}
                if ends:
                    return True
        return False

    return holds


def au(last: str, initials: str = "") -> Pred:
    """``Last I[au]``: an author of that last name whose initials start with ``I``."""
    return lambda r: any(_is(a, last, initials) for a in r.authors)


def first_au(last: str, initials: str = "") -> Pred:
    return lambda r: bool(r.authors) and _is(r.authors[0], last, initials)


def last_au(last: str, initials: str = "") -> Pred:
    return lambda r: bool(r.authors) and _is(r.authors[-1], last, initials)


def _is(author: object, last: str, initials: str) -> bool:
    return fold(author.last) == fold(last) and fold(author.initials).startswith(  # type: ignore[attr-defined]
        fold(initials)
    )


def fau(last: str, fore: str) -> Pred:
    return lambda r: any(
        fold(a.last) == fold(last) and fold(a.fore) == fold(fore) for a in r.authors
    )


def ad(phrase: str) -> Pred:
    return lambda r: any(_phrase_in(x, phrase) for a in r.authors for x in a.affiliations)


def ta(name: str) -> Pred:
    """``[ta]``: the MedlineTA, ISO abbreviation, full title or ISSN, punctuation aside."""
    return lambda r: any(words(n) == words(name) for n in r.journal_names)


def dp(first: int, last: int) -> Pred:
    """``[dp]``: the print or the electronic publication date falls in ``first``..``last``
    (PubMed help, "Publication Date": date searching includes both). A date given as a
    month (or a MedlineDate range) covers its every day."""
    return lambda r: ppdat(first, last)(r) or epdat(first, last)(r)


def ppdat(first: int, last: int) -> Pred:
    """``[ppdat]``: the print date. A print date of a year alone, on a record whose
    electronic date is in that year, is that electronic date (PubMed's sort date for
    the record; docs/query-language.md, "Dates")."""

    def holds(r: Ref) -> bool:
        span = r.span
        if r.year_only and r.epub and span and r.epub[0] // 10000 == span[0] // 10000:
            span = r.epub
        return span is not None and span[0] <= last and span[1] >= first

    return holds


def epdat(first: int, last: int) -> Pred:
    return lambda r: r.epub is not None and r.epub[0] <= last and r.epub[1] >= first


RECORD_STATUSES = {
    "crdt": ("entrez", "pubmed"),
    "edat": ("pubmed", "entrez"),
    "mhda": ("medline", "pubmed"),
}
"""PubMed help, "Search by date", and NLM's technical bulletin nd08 ("Create Date"): the
PubMedPubDate each record-date tag reads, the first of these a record has."""


def record_date(tag: str, first: int, last: int) -> Pred:
    """``[crdt]``, ``[edat]``, ``[mhda]``: that history date; ``[dcom]`` DateCompleted,
    ``[lr]`` DateRevised."""

    def holds(r: Ref) -> bool:
        if tag == "dcom":
            day = r.completed
        elif tag == "lr":
            day = r.revised
        else:
            history = dict(r.history)
            day = next((history[s] for s in RECORD_STATUSES[tag] if s in history), 0)
        return bool(day) and first <= day <= last

    return holds


def rn(number: str) -> Pred:
    return lambda r: any(fold(n) == fold(number) for n in r.registry_numbers)


def mh(name: str, *, major: bool = False) -> Pred:
    """``[mh]``/``[majr]``: the heading itself, whole (no explosion); ``Heading/sub``
    one qualifier of it. Major: the heading or that qualifier is starred."""
    heading, _, sub = name.partition("/")

    def holds(r: Ref) -> bool:
        for h in r.headings:
            if fold(h.name) != fold(heading):
                continue
            if not sub and (not major or h.major or any(m for _, m in h.qualifiers)):
                return True
            for q, q_major in h.qualifiers:
                if fold(q) == fold(sub) and (not major or h.major or q_major):
                    return True
        return False

    return holds


def sh(name: str) -> Pred:
    return lambda r: any(fold(q) == fold(name) for h in r.headings for q, _ in h.qualifiers)


def pt(name: str) -> Pred:
    return lambda r: any(fold(p) == fold(name) for p in r.pub_types)


def la(code: str) -> Pred:
    return lambda r: code in r.languages


def pmids(*ids: int) -> Pred:
    return lambda r: r.pmid in ids


def aid(value: str) -> Pred:
    return lambda r: any(v.casefold() == value.casefold() for _, v in r.ids)


def gr(phrase: str) -> Pred:
    return lambda r: any(_phrase_in(" ".join(g), phrase) for g in r.grants)


def sb(subset: str) -> Pred:
    rules: dict[str, Pred] = {
        "hasabstract": lambda r: bool(r.abstract),
        "medline": lambda r: r.status in ("MEDLINE", "OLDMEDLINE"),
        "pubmed not medline": lambda r: r.status == "PubMed-not-MEDLINE",
        "free full text": lambda r: any(t == "pmc" for t, _ in r.ids),
    }
    return rules[subset]


def AND(*preds: Pred) -> Pred:
    return lambda r: all(p(r) for p in preds)


def OR(*preds: Pred) -> Pred:
    return lambda r: any(p(r) for p in preds)


def NOT(keep: Pred, drop: Pred) -> Pred:
    return lambda r: keep(r) and not drop(r)


QUERIES: list[tuple[str, Pred]] = [
    # words and phrases in the title and abstract
    ("phacoemulsification[ti]", ti("phacoemulsification")),
    ("femtosecond[tiab]", tiab("femtosecond")),
    ("endometriosis[ab]", ab("endometriosis")),
    ("intraocular[ti]", ti("intraocular")),
    ("cataract surgery[tiab]", tiab("cataract surgery")),
    ('"atrial fibrillation"[ti]', ti("atrial fibrillation")),
    ('"cataract surgery"', untagged("cataract surgery")),
    ('"optical coherence tomography"', untagged("optical coherence tomography")),
    ("zebrafish", untagged("zebrafish")),
    ("femtosecond laser[tiab]", tiab("femtosecond laser")),
    ("plasmodium falciparum[tiab]", tiab("plasmodium falciparum")),
    # implicit AND, explicit operators (left to right, no precedence), nesting
    (
        "intraocular[ti] phacoemulsification",
        AND(ti("intraocular"), untagged("phacoemulsification")),
    ),
    ("femtosecond[tiab] AND cataract[tiab]", AND(tiab("femtosecond"), tiab("cataract"))),
    ("anesthesia[tiab] OR analgesia[tiab]", OR(tiab("anesthesia"), tiab("analgesia"))),
    ("endometriosis[tiab] NOT infertility[tiab]", NOT(tiab("endometriosis"), tiab("infertility"))),
    (
        "(malaria[tiab] OR plasmodium[tiab]) AND mosquito[tiab]",
        AND(OR(tiab("malaria"), tiab("plasmodium")), tiab("mosquito")),
    ),
    (
        "femtosecond[tiab] AND (cataract[ti] OR zebrafish[tiab])",
        AND(tiab("femtosecond"), OR(ti("cataract"), tiab("zebrafish"))),
    ),
    (
        "(endometriosis[tiab] AND (pain[ti] OR infertility[tiab])) NOT review[pt]",
        NOT(AND(tiab("endometriosis"), OR(ti("pain"), tiab("infertility"))), pt("review")),
    ),
    (
        "femtosecond[tiab] OR zebrafish[tiab] NOT cataract[tiab]",
        NOT(OR(tiab("femtosecond"), tiab("zebrafish")), tiab("cataract")),
    ),
    (
        "cataract[tiab] NOT femtosecond[tiab] OR zebrafish[tiab]",
        OR(NOT(tiab("cataract"), tiab("femtosecond")), tiab("zebrafish")),
    ),
    ("zebrafish AND malaria", AND(untagged("zebrafish"), untagged("malaria"))),
    # truncation and proximity
    ("phaco*[tiab]", tiab_prefix("phaco")),
    ("zebraf*[tiab]", tiab_prefix("zebraf")),
    ('"femtosecond lase*"[tiab]', tiab_prefix("femtosecond lase")),
    ('"coherence tomography"[tiab:~0]', near("tiab", "coherence tomography", 0)),
    ('"laser femtosecond"[tiab:~2]', near("tiab", "laser femtosecond", 2)),
    ('"fibrillation atrial"[ti:~1]', near("ti", "fibrillation atrial", 1)),
    ('"tomography optical coherence"[tiab:~1]', near("tiab", "tomography optical coherence", 1)),
    # authors
    ("Wang Y[au]", au("Wang", "Y")),
    ("Zhang[au]", au("Zhang")),
    ("Müller GC[au]", au("Müller", "GC")),
    ("Muller G[au]", au("Müller", "G")),
    ("Varella-Garcia M[au]", au("Varella-Garcia", "M")),
    ("Bixler EO[au] AND Vgontzas AN[au]", AND(au("Bixler", "EO"), au("Vgontzas", "AN"))),
    ("Li H[1au]", first_au("Li", "H")),
    ("Wang[1au]", first_au("Wang")),
    ("Zhang[lastau]", last_au("Zhang")),
    ("Filizola M[lastau]", last_au("Filizola", "M")),
    ("Singh Shailja[fau]", fau("Singh", "Shailja")),
    ('"Wang, Li"[au]', fau("Wang", "Li")),
    ("Singh S[au] AND india[ad]", AND(au("Singh", "S"), ad("india"))),
    # affiliations
    ("karolinska[ad]", ad("karolinska")),
    ("harvard medical school[ad]", ad("harvard medical school")),
    ("china[ad] AND cataract[tiab]", AND(ad("china"), tiab("cataract"))),
    # journals: MedlineTA, ISO abbreviation, full title, ISSN
    ("J Biol Chem[ta]", ta("J Biol Chem")),
    ("J. Biol. Chem.[ta]", ta("J. Biol. Chem.")),
    (
        "Journal of cataract and refractive surgery[jour]",
        ta("Journal of cataract and refractive surgery"),
    ),
    ("0021-9258[ta]", ta("0021-9258")),
    ("Acta Trop[ta] AND malaria[tiab]", AND(ta("Acta Trop"), tiab("malaria"))),
    ("Fertil Steril[ta] NOT endometriosis[tiab]", NOT(ta("Fertil Steril"), tiab("endometriosis"))),
    # publication dates: print or electronic, months and MedlineDate ranges
    ("1975[dp]", dp(19750101, 19751231)),
    ("2018[dp]", dp(20180101, 20181231)),
    ("2019/12[dp]", dp(20191201, 20191231)),
    ("2016/01[dp]", dp(20160101, 20160131)),
    ("2019/05[dp]", dp(20190501, 20190531)),
    ("2001:2010[dp]", dp(20010101, 20101231)),
    ("2019/12/01:2020/01/31[dp]", dp(20191201, 20200131)),
    ("2019/08[dp]", dp(20190801, 20190831)),  # electronic dates widen it: 47 in print
    ("2019/07/15:2019/09/15[dp]", dp(20190715, 20190915)),
    ("1976:1990[dp] OR 2023[dp]", OR(dp(19760101, 19901231), dp(20230101, 20231231))),
    # MeSH: whole headings (no explosion), subheadings, major topics
    ("Humans[mh]", mh("Humans")),
    ("Cells, Cultured[mh:noexp]", mh("Cells, Cultured")),
    ("Cataract[mh:noexp]", mh("Cataract")),
    ("Lung Neoplasms[majr:noexp]", mh("Lung Neoplasms", major=True)),
    ("Liver/enzymology[majr:noexp]", mh("Liver/enzymology", major=True)),
    ("Lung Neoplasms/genetics[mh:noexp]", mh("Lung Neoplasms/genetics")),
    ("metabolism[sh:noexp]", sh("metabolism")),
    ("drug effects[sh:noexp] AND Mice[mh:noexp]", AND(sh("drug effects"), mh("Mice"))),
    ("Humans[mh] NOT Animals[mh:noexp]", NOT(mh("Humans"), mh("Animals"))),
    # publication types, languages
    ("review[pt]", pt("review")),
    ("journal article[pt]", pt("journal article")),
    ("randomized controlled trial[pt]", pt("randomized controlled trial")),
    ("english[la]", la("eng")),
    ("ita[la]", la("ita")),
    ("german[la]", la("ger")),
    ("review[pt] AND cataract[tiab]", AND(pt("review"), tiab("cataract"))),
    # identifiers, grants, subsets
    ("26432306 25995305 26407462[pmid]", pmids(26432306, 25995305, 26407462)),
    ("10.1158/1078-0432.CCR-09-0226[aid]", aid("10.1158/1078-0432.CCR-09-0226")),
    ("NCI NIH HHS[gr]", gr("NCI NIH HHS")),
    ("R01 CA075115[gr]", gr("R01 CA075115")),
    ("hasabstract[sb]", sb("hasabstract")),
    ("medline[sb]", sb("medline")),
    ("pubmed not medline[sb]", sb("pubmed not medline")),
    ("free full text[sb]", sb("free full text")),
    ("hasabstract[sb] AND 1975[dp]", AND(sb("hasabstract"), dp(19750101, 19751231))),
    # empty answers
    ("brca1[ti] AND review[pt]", AND(ti("brca1"), pt("review"))),
    ("zebrafish[ti] AND 1975[dp]", AND(ti("zebrafish"), dp(19750101, 19751231))),
    ("quality of life[ti]", ti("quality of life")),
    ("non-small cell lung[tiab]", tiab("non small cell lung")),
    (
        "cataract[tiab] NOT (femtosecond[tiab] OR review[pt])",
        NOT(tiab("cataract"), OR(tiab("femtosecond"), pt("review"))),
    ),
    ("review[pt] OR letter[pt]", OR(pt("review"), pt("letter"))),
    ("cataract[tiab] OR review[pt]", OR(tiab("cataract"), pt("review"))),
    ("zebrafish[tiab] OR 1975[dp]", OR(tiab("zebrafish"), dp(19750101, 19751231))),
    (
        "(cataract[tiab] OR surgery[ti]) AND (ita[la] OR ger[la])",
        AND(OR(tiab("cataract"), ti("surgery")), OR(la("ita"), la("ger"))),
    ),
    (
        "Humans[mh] AND 2015[dp] AND review[pt]",
        AND(mh("Humans"), dp(20150101, 20151231), pt("review")),
    ),
    ("ita[la] NOT hasabstract[sb]", NOT(la("ita"), sb("hasabstract"))),
    ("Research Support, Non-U.S. Gov't[pt]", pt("Research Support, Non-U.S. Gov't")),
    ("0886-3350[ta]", ta("0886-3350")),
    (
        "Journal of anaesthesiology, clinical pharmacology[ta]",
        ta("Journal of anaesthesiology, clinical pharmacology"),
    ),
    ("25995305,26407462[pmid]", pmids(25995305, 26407462)),
    ("R01 CA075115-12[gr]", gr("R01 CA075115-12")),
    ("israel department[ad]", ad("israel department")),
    ("2019/12/15[dp]", dp(20191215, 20191215)),
    ("eng[la]", la("eng")),
    ("pmc[sb]", sb("free full text")),
    ("Singh Shailja[au]", fau("Singh", "Shailja")),
    ('"in vitro"[tiab]', tiab("in vitro")),
    ('"in vitro" AND mice[tiab]', AND(untagged("in vitro"), tiab("mice"))),
    ("non-small-cell[tiab]", tiab("non small cell")),
    ('"cataract surgery"[ti:~3]', near("ti", "cataract surgery", 3)),
    ('"medical school harvard"[ad:~2]', near("ad", "medical school harvard", 2)),
    ("electronic address[ad]", ad("electronic address")),
    ("Clinical Trial, Phase II[pt]", pt("Clinical Trial, Phase II")),
    ("Italian[la]", la("ita")),
    ("Am J Orthod Dentofacial Orthop[ta]", ta("Am J Orthod Dentofacial Orthop")),
    ("Signal Transduction/physiology[mh:noexp]", mh("Signal Transduction/physiology")),
    (
        "Liver[majr:noexp] NOT Liver/enzymology[majr:noexp]",
        NOT(mh("Liver", major=True), mh("Liver/enzymology", major=True)),
    ),
]

# PubMed's fields as PubMed defines them (issue 39 "What users get" 2)
QUERIES += [
    # [tiab]: other abstracts and author keywords too
    ("alirocumab[tiab]", tiab("alirocumab")),  # an author keyword alone
    ("magnetic resonance[tiab]", tiab("magnetic resonance")),
    ("articolo[tiab]", tiab("articolo")),  # an Italian OtherAbstract
    (
        '"femtosecond laser"[tiab] OR alirocumab[tiab]',
        OR(tiab("femtosecond laser"), tiab("alirocumab")),
    ),
    # [tw]: PubMed's text words
    ("letter[tw]", tw("letter")),
    ("editorial[Text Word] OR drug therapy[tw]", OR(tw("editorial"), tw("drug therapy"))),
    ("pro-phenoloxidase[tw]", tw("pro phenoloxidase")),  # a substance name
    ("Bacterial Proteins[tw]", tw("Bacterial Proteins")),
    ("NCT00585195[tw]", tw("NCT00585195")),  # a secondary source ID
    ("passi[tw]", tw("passi")),  # a corporate author
    ("mice[tw] NOT mice[mh:noexp]", NOT(tw("mice"), mh("Mice"))),
    ("gorostiaga[tw]", tw("gorostiaga")),  # an author is not a text word
    # [all] and untagged words: every field, authors and journals too
    ("gorostiaga[all]", all_fields("gorostiaga")),
    ("gorostiaga", untagged("gorostiaga")),
    ("harvard[All Fields]", all_fields("harvard")),
    ("j biol chem[all]", all_fields("j biol chem")),
    ("china AND cataract", AND(untagged("china"), untagged("cataract"))),
    # record dates and the print and electronic dates alone
    ("2019/09[crdt]", record_date("crdt", 20190901, 20190931)),
    ("2019/08[Date - Create]", record_date("crdt", 20190801, 20190831)),
    ("2019/08/08[edat]", record_date("edat", 20190808, 20190808)),
    ("2019/08/01:2019/08/31[Date - Entrez]", record_date("edat", 20190801, 20190831)),
    ("2015[dcom]", record_date("dcom", 20150000, 20151231)),
    ("2015/06:2015/12[Date - Completion]", record_date("dcom", 20150600, 20151231)),
    ("2020[lr]", record_date("lr", 20200000, 20201231)),
    ("2019:2020[Date - Last Revision]", record_date("lr", 20190000, 20201231)),
    ("2019[mhda]", record_date("mhda", 20190000, 20191231)),
    ("2019/09[Date - MeSH]", record_date("mhda", 20190900, 20190931)),
    ("2019/06[epdat]", epdat(20190600, 20190631)),
    ("2019/06/28[Date - Electronic Publication]", epdat(20190628, 20190628)),
    ("2019/08[ppdat]", ppdat(20190800, 20190831)),
    ("2019[Date - Print Publication]", ppdat(20190000, 20191231)),
    ("2019/08[Date - Publication]", dp(20190800, 20190831)),
    (
        "cataract[tiab] AND 2015[dcom]",
        AND(tiab("cataract"), record_date("dcom", 20150000, 20151231)),
    ),
    # [ptyp] and [rn]
    ("review[ptyp]", pt("review")),
    ('"Lung Neoplasms / genetics"[mh:noexp]', mh("Lung Neoplasms/genetics")),
    ("Signal Transduction /physiology[mesh:no exp]", mh("Signal Transduction/physiology")),
    ("EC 2.7.10.1[rn]", rn("EC 2.7.10.1")),
    ("53-59-8[rn]", rn("53-59-8")),
    ("E1UOL152H7[rn] OR EC 3.6.5.2[rn]", OR(rn("E1UOL152H7"), rn("EC 3.6.5.2"))),
]

K = 1000
"""Hits the CLI asks for: more than the corpus holds, so every set comes back whole.
The Searcher asks for one more than the expected set: a hit too many would show."""


def xml_files() -> list[Path]:
    """Every PubMed XML file in the shared folder. Its MEDLINE-format text files
    (biopython's ``pubmed_result*.txt``) are left out: the reference reads XML."""
    folder = SHARED_DATA / "pubmed"
    if not folder.exists():
        pytest.skip(f"shared data not available: {folder}")
    return sorted(p for p in folder.rglob("*") if p.name.endswith((".xml", ".xml.gz")))


@pytest.fixture(scope="module")
def reading() -> tuple[dict[int, Ref], set[int]]:
    return read_corpus(xml_files())


@pytest.fixture(scope="module")
def corpus(reading: tuple[dict[int, Ref], set[int]]) -> dict[int, Ref]:
    return reading[0]


@pytest.fixture(scope="module")
def answers(corpus: dict[int, Ref]) -> dict[str, set[int]]:
    """Each query's expected set, computed once."""
    return {query: expected(corpus, predicate) for query, predicate in QUERIES}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    from ingest.pipeline import Ingestor

    paths = Paths(tmp_path_factory.mktemp("parity") / "home")
    with Ingestor(paths, jobs=0) as ingestor:
        assert ingestor.run(xml_files()).ok
    return paths


@pytest.fixture(scope="module")
def lexical(home: Paths) -> Iterator[Searcher]:
    searcher = open_searcher(home)
    yield searcher
    searcher.close()


def expected(corpus: dict[int, Ref], predicate: Pred) -> set[int]:
    return {pmid for pmid, ref in corpus.items() if predicate(ref)}


def assert_same_set(result: object, want: set[int]) -> None:
    got = [h.pmid for h in result.hits]  # type: ignore[attr-defined]
    assert sorted(set(got) - want) == []  # every hit satisfies the query
    assert sorted(want - set(got)) == []  # and no article that does is missing
    assert len(got) == len(want)  # each once
    assert result.total == len(want)  # type: ignore[attr-defined]


def test_the_index_holds_the_records_the_xml_leaves_standing(
    lexical: Searcher, reading: tuple[dict[int, Ref], set[int]]
) -> None:
    corpus, deleted = reading
    assert lexical.store.count() == len(corpus) < K
    assert lexical.store.existing(sorted(corpus)) == set(corpus)
    assert deleted  # medline16n0902 deletes a citation
    assert lexical.store.existing(sorted(deleted)) == set() == set(corpus) & deleted


def test_a_later_file_replaces_and_deletes_as_the_reference_applies_it(tmp_path: Path) -> None:
    """The shared files hold one deletion and no PMID twice, so the update rules are
    checked here on two small files, given to ingest in the wrong order."""
    from ingest.pipeline import Ingestor

    first = pubmed_file(
        tmp_path / "pubmed26n0001.xml",
        [article_xml(7, "Lens opacity in adults"), article_xml(8, "Lens"), article_xml(9, "Lens")],
    )
    later = pubmed_file(
        tmp_path / "pubmed26n0002.xml", [article_xml(7, "Intraocular lens in adults")], [8]
    )
    refs, deleted = read_corpus([later, first])
    assert (sorted(refs), refs[7].title, deleted) == ([7, 9], "Intraocular lens in adults", {8})
    paths = Paths(tmp_path / "home")
    with Ingestor(paths, jobs=0) as ingestor:
        assert ingestor.run([later, first]).ok
    searcher = open_searcher(paths)
    try:
        for query, predicate in [
            ("lens[ti]", ti("lens")),
            ("intraocular[ti]", ti("intraocular")),
            ("opacity[ti]", ti("opacity")),
            ("7 8 9[pmid]", pmids(7, 8, 9)),
        ]:
            want = expected(refs, predicate)
            assert_same_set(searcher.search(query, mode="lexical", k=10), want)
    finally:
        searcher.close()


def test_the_queries_ask_for_sets_of_every_size(
    corpus: dict[int, Ref], answers: dict[str, set[int]]
) -> None:
    sizes = [len(answers[query]) for query, _ in QUERIES]
    assert len(QUERIES) >= 60
    assert len({q for q, _ in QUERIES}) == len(QUERIES)
    assert 3 <= sizes.count(0) <= len(sizes) // 10  # some empty, most not
    assert sum(size >= 100 for size in sizes) >= 5  # a few large
    assert max(sizes) < len(corpus)  # none is the whole corpus


def test_the_answers_do_not_depend_on_stemming(
    corpus: dict[int, Ref], answers: dict[str, set[int]]
) -> None:
    """Our index stems text words and PubMed does not; the queries are chosen so that
    comparing words by their stems changes no answer."""
    with stemmed():
        by_stems = {query: expected(corpus, predicate) for query, predicate in QUERIES}
    assert {q for q in answers if answers[q] != by_stems[q]} == set()


@pytest.mark.parametrize("query", [q for q, _ in QUERIES])
def test_a_query_finds_pubmeds_set_in_lexical_mode(
    lexical: Searcher, answers: dict[str, set[int]], query: str
) -> None:
    want = answers[query]
    result = lexical.search(query, mode="lexical", k=len(want) + 1, snippets=False)
    assert_same_set(result, want)


CLI_QUERIES = [
    "cataract surgery[tiab]",
    "Muller G[au]",
    "2019/12[dp]",
    "Lung Neoplasms[majr:noexp]",
    "brca1[ti] AND review[pt]",
]


def cli(home: Paths, *args: str) -> str:
    result = CliRunner().invoke(main, ["--home", str(home.home), "search", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("query", CLI_QUERIES)
def test_the_cli_prints_the_set_and_counts_it(
    home: Paths, answers: dict[str, set[int]], query: str
) -> None:
    want = answers[query]
    data = json.loads(cli(home, query, "--json", "--mode", "lexical", "-k", str(K)))
    assert {h["pmid"] for h in data["hits"]} == want and len(data["hits"]) == len(want)
    assert data["total"] == len(want) and data["counted"] == "set"
    assert cli(home, query, "--count").strip() == str(len(want))


# -- dense and hybrid: the same sets, ordered by the vectors ------------------------------


@pytest.fixture(scope="module")
def vectors(
    home: Paths, corpus: dict[int, Ref], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Searcher]:
    """``home`` with article vectors from tiny real BERT models (their order means
    nothing; the set must not change), whose vocabulary holds the corpus's common
    words. Abstract sentences are not encoded: no query here reads them."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 32-wide matrices: a second thread would only wait
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OMP_NUM_THREADS", "1")  # so that loading the models keeps one
        yield from _encoded(home, corpus, tmp_path_factory)
    torch.set_num_threads(threads)


def _encoded(
    home: Paths, corpus: dict[int, Ref], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Searcher]:
    from ingest.encode_stage import run_vectors_stage
    from medsearch.progress import NullProgress
    from medsearch.store import Store

    common = Counter(w for r in corpus.values() for w in words(f"{r.title} {r.abstract}"))
    models = build_tiny_models(
        tmp_path_factory.mktemp("parity-models"),
        extra_words=[w for w, _ in common.most_common(20_000) if w.isalpha()],
    )
    write_tiny_config(home, models)
    with home.config_file.open("a", encoding="utf-8") as config:  # short inputs: ~10x cheaper
        config.write("article_max_length = 32\nquery_max_length = 16\n")
    store = Store(home.store)
    try:
        run_vectors_stage(
            home,
            store,
            profile="tiny",
            device="cpu",
            index_factory=None,
            embeddings=None,
            encode=True,
            progress=NullProgress(),
            sentences=False,
        )
    finally:
        store.close()
    searcher = open_searcher(home, device="cpu", load=True)
    searcher.settings = replace(searcher.settings, rerank="none")
    yield searcher
    searcher.close()


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
@pytest.mark.parametrize("query", [q for q, _ in QUERIES])
def test_a_query_keeps_pubmeds_set_in_dense_and_hybrid_modes(
    vectors: Searcher, answers: dict[str, set[int]], query: str, mode: str
) -> None:
    want = answers[query]
    result = vectors.search(query, mode=mode, k=len(want) + 1, snippets=False)
    assert result.mode == mode
    if result.counted == "set":
        assert_same_set(result, want)
        return
    # plain words rank the whole corpus; their count and their marked hits are the set
    ranked = vectors.search(query, mode=mode, k=K, snippets=False)
    assert {h.pmid for h in ranked.hits if h.all_words} == want
    assert ranked.total == len(want)


@pytest.mark.parametrize("query", CLI_QUERIES[:2])
def test_the_cli_keeps_the_set_in_hybrid_mode(
    vectors: Searcher, home: Paths, answers: dict[str, set[int]], query: str
) -> None:
    want = answers[query]
    data = json.loads(cli(home, query, "--json", "-k", str(K), "--device", "cpu"))
    assert data["mode"] == "hybrid"
    assert {h["pmid"] for h in data["hits"]} == want and data["total"] == len(want)
    assert cli(home, query, "--count", "--device", "cpu").strip() == str(len(want))
