"""NCBI's E-utilities from ``medsearch serve``, read by a real client: Biopython's
``Bio.Entrez`` (which validates against the NCBI DTDs it ships) and ``Bio.Medline``,
talking to a real uvicorn on 127.0.0.1. Biopython calls NCBI's host by name, so the test
points its ``urlopen`` at the local base URL, the one change a user makes too
(docs/service.md)."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from lxml import etree

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.serve.access import ensure_token
from medsearch.serve.app import build_app
from medsearch.serve.run import tcp_socket
from medsearch.serve.state import Warm
from tests.conftest import wait_until
from tests.serve_home import build_home

Entrez = pytest.importorskip("Bio.Entrez")
Medline = pytest.importorskip("Bio.Medline")

NCBI = "https://eutils.ncbi.nlm.nih.gov"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("eutils"))


@pytest.fixture(scope="module")
def base(home: Path) -> Iterator[str]:
    """A real uvicorn serving the home on 127.0.0.1 (a free port), for the module."""
    import uvicorn

    paths = Paths(home)
    warm = Warm(paths)
    token = ensure_token(paths)
    sock = tcp_socket("127.0.0.1", 0)
    config = uvicorn.Config(build_app(warm, token), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert wait_until(lambda: server.started, 30)
    saved = (Entrez.api_key, Entrez.email, Entrez.max_tries)
    Entrez.api_key, Entrez.email, Entrez.max_tries = token, "test@example.org", 1
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    Entrez.api_key, Entrez.email, Entrez.max_tries = saved
    server.should_exit = True
    thread.join(10)
    sock.close()
    warm.close()


@pytest.fixture(autouse=True)
def local_entrez(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bio.Entrez's requests go to the service instead of NCBI."""

    def urlopen(request: urllib.request.Request) -> Any:
        assert request.full_url.startswith(NCBI), request.full_url
        request.full_url = base + request.full_url[len(NCBI) :]
        return urllib.request.urlopen(request, timeout=30)

    monkeypatch.setattr(Entrez, "urlopen", urlopen)


def cli_json(home: Path, *args: str) -> Any:
    result = CliRunner().invoke(main, ["--home", str(home), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def read(handle: Any) -> Any:
    with handle:
        return Entrez.read(handle)


def test_einfo_lists_pubmed_and_its_count(home: Path) -> None:
    assert list(read(Entrez.einfo())["DbList"]) == ["pubmed"]
    info = read(Entrez.einfo(db="pubmed"))["DbInfo"]
    assert info["DbName"] == "pubmed"
    assert int(info["Count"]) == cli_json(home, "stats")["articles"]
    assert {link["Name"] for link in info["LinkList"]} == {
        "pubmed_pubmed",
        "pubmed_pubmed_refs",
        "pubmed_pubmed_citedin",
    }


def test_esearch_counts_pages_and_sorts_as_search_does(home: Path) -> None:
    found = read(Entrez.esearch(db="pubmed", term="heart failure", retmax=100))
    assert int(found["Count"]) == cli_json(home, "search", "heart failure", "--count")["count"]
    newest = cli_json(home, "search", "heart failure", "--sort", "date", "-k", "100")
    members = [h["pmid"] for h in newest["hits"]]  # a sort covers the counted set: all words
    assert [int(i) for i in found["IdList"]] == members
    assert len(members) == int(found["Count"])
    page = read(Entrez.esearch(db="pubmed", term="heart failure", retstart=1, retmax=2))
    assert page["IdList"] == found["IdList"][1:3]
    assert (page["RetStart"], page["RetMax"]) == ("1", "2")
    dated = read(
        Entrez.esearch(
            db="pubmed", term="heart failure", datetype="pdat", mindate="2019", maxdate="2020"
        )
    )
    assert sorted(dated["IdList"]) == ["90000002", "90000003"]


def test_esearch_translation_comes_from_the_parse(home: Path) -> None:
    found = read(Entrez.esearch(db="pubmed", term="cardiac[ti] AND remodelling[ti] NOT 2018[dp]"))
    assert found["QueryTranslation"] == "cardiac[ti] AND remodelling[ti] NOT 2018[dp]"
    stack = found["TranslationStack"]
    terms = [(t["Term"], t["Field"], t["Count"]) for t in stack if not isinstance(t, str)]
    assert terms == [
        ("cardiac[ti]", "Title", "5"),
        ("remodelling[ti]", "Title", "5"),
        ("2018[dp]", "Publication Date", "1"),
    ]
    assert [t for t in stack if isinstance(t, str)] == ["AND", "NOT"]
    assert int(found["Count"]) == 4


def test_esearch_json_and_errors_take_ncbi_s_shape(base: str) -> None:
    url = f"{base}/entrez/eutils/esearch.fcgi?db=pubmed&term=heart&retmode=json&api_key="
    with urllib.request.urlopen(url + str(Entrez.api_key)) as answer:
        body = json.load(answer)
    assert body["header"]["type"] == "esearch"
    assert body["esearchresult"]["count"] == str(len(body["esearchresult"]["idlist"]))
    with pytest.raises(RuntimeError, match="Empty term and query_key"):
        read(Entrez.esearch(db="pubmed", term=""))
    with pytest.raises(RuntimeError, match="Invalid db name"):
        read(Entrez.esearch(db="protein", term="heart"))


def test_efetch_xml_parses_with_the_pubmed_dtd(home: Path) -> None:
    shown = cli_json(home, "show", "90000003")
    records = read(Entrez.efetch(db="pubmed", id="90000003,90000001", retmode="xml"))
    articles = records["PubmedArticle"]
    assert [str(a["MedlineCitation"]["PMID"]) for a in articles] == ["90000003", "90000001"]
    citation = articles[0]["MedlineCitation"]["Article"]
    assert str(citation["ArticleTitle"]) == shown["title"]
    assert str(citation["Journal"]["Title"]) == shown["journal"]
    refs = articles[0]["PubmedData"]["ReferenceList"][0]["Reference"]
    assert [str(r["ArticleIdList"][0]) for r in refs] == ["90000010", "90000001", "90000002"]
    assert list(records["PubmedBookArticle"]) == []


def test_efetch_medline_is_export_nbib(home: Path) -> None:
    with Entrez.efetch(db="pubmed", id="90000002,90000001", rettype="medline", retmode="text") as h:
        text = h.read()
    nbib = CliRunner().invoke(
        main, ["--home", str(home), "export", "90000002", "90000001", "--format", "nbib"]
    )
    assert text == nbib.stdout
    with Entrez.efetch(db="pubmed", id="90000002,90000001", rettype="medline", retmode="text") as h:
        records = list(Medline.parse(h))
    assert [r["PMID"] for r in records] == ["90000002", "90000001"]
    assert records[0]["TI"] == "Cardiac remodelling in heart failure, part 2"
    assert records[0]["AU"] == ["Doe J"]
    with Entrez.efetch(db="pubmed", id="90000002", rettype="abstract", retmode="text") as h:
        abstract = h.read()
    assert abstract.startswith("1. J Card Fail. 2019 Mar;1(2).")
    assert "PMID: 90000002" in abstract


def test_esummary_v1_v2_and_json(home: Path, base: str) -> None:
    with Entrez.esummary(db="pubmed", id="90000001,90000011") as handle:
        docs = list(Entrez.parse(handle))  # a list at the DTD's root: parsed record by record
    assert [d["Id"] for d in docs] == ["90000001", "90000011"]
    assert docs[0]["Title"] == "Cardiac remodelling in heart failure, part 1"
    assert docs[0]["AuthorList"] == ["Doe J"]
    assert docs[0]["PubDate"] == "2018 Mar"
    with Entrez.esummary(db="pubmed", id="90000001", version="2.0") as handle:
        v2 = etree.fromstring(handle.read())
    summary = v2.find("DocumentSummarySet/DocumentSummary")
    assert summary is not None and summary.get("uid") == "90000001"
    assert summary.findtext("Source") == "J Card Fail"
    assert [a.findtext("Name") for a in summary.iterfind("Authors/Author")] == ["Doe J"]
    url = f"{base}/entrez/eutils/esummary.fcgi?db=pubmed&id=90000001&retmode=json&api_key="
    with urllib.request.urlopen(url + str(Entrez.api_key)) as answer:
        body = json.load(answer)
    assert body["result"]["uids"] == ["90000001"]
    assert body["result"]["90000001"]["title"] == docs[0]["Title"]


def link_ids(answer: Any, name: str) -> set[str]:
    for db in answer[0]["LinkSetDb"]:
        if db["LinkName"] == name:
            return {link["Id"] for link in db["Link"]}
    return set()


def test_elink_refs_and_citedin_come_from_the_citation_graph() -> None:
    refs = read(Entrez.elink(dbfrom="pubmed", id="90000003", linkname="pubmed_pubmed_refs"))
    assert link_ids(refs, "pubmed_pubmed_refs") == {"90000010", "90000001", "90000002"}
    cited = read(Entrez.elink(dbfrom="pubmed", id="90000001", linkname="pubmed_pubmed_citedin"))
    assert link_ids(cited, "pubmed_pubmed_citedin") == {"90000002", "90000003"}
    every = read(Entrez.elink(dbfrom="pubmed", id="90000001"))
    assert link_ids(every, "pubmed_pubmed_refs") == {"90000010", "90000011"}
    assert link_ids(every, "pubmed_pubmed") >= {"90000002", "90000003"}  # co-cited, no vectors
    with pytest.raises(RuntimeError, match="linkname"):
        read(Entrez.elink(dbfrom="pubmed", id="90000001", linkname="pubmed_protein"))


def test_epost_and_history_feed_efetch_and_esummary() -> None:
    posted = read(Entrez.epost(db="pubmed", id="90000011,90000010,123456789"))
    assert list(posted["InvalidIdList"]) == ["123456789"]
    web_env, key = posted["WebEnv"], posted["QueryKey"]
    docs = read(Entrez.esummary(db="pubmed", webenv=web_env, query_key=key))
    assert [d["Id"] for d in docs] == ["90000011", "90000010"]
    found = read(Entrez.esearch(db="pubmed", term="cardiac[ti]", usehistory="y", sort="pub_date"))
    with Entrez.efetch(
        db="pubmed",
        webenv=found["WebEnv"],
        query_key=found["QueryKey"],
        retmax=2,
        rettype="medline",
        retmode="text",
    ) as handle:
        fetched = [r["PMID"] for r in Medline.parse(handle)]
    assert fetched == ["90000003", "90000002"]
    with pytest.raises(RuntimeError, match="Unable to obtain query"):
        read(Entrez.esummary(db="pubmed", webenv="MCID_nothing", query_key="1"))


def test_espell_and_ecitmatch() -> None:
    spelled = read(Entrez.espell(db="pubmed", term="remodeling cardaic"))
    assert spelled["Query"] == "remodeling cardaic"
    assert "cardiac" in spelled["CorrectedQuery"]
    lines = [
        "J Card Fail|2019|1||Doe J|first|",
        "J Card Fail|2020|1||Doe J|second|",
        "J Card Fail|1999|1||Doe J|third|",
    ]
    with Entrez.ecitmatch(db="pubmed", bdata="\r".join(lines)) as handle:
        answered = handle.read().splitlines()
    assert [line.rsplit("|", 1)[1] for line in answered] == ["90000002", "90000003", "NOT_FOUND"]


def test_elink_scores_history_and_json(base: str) -> None:
    scored = read(
        Entrez.elink(dbfrom="pubmed", id="90000001", linkname="pubmed_pubmed", cmd="neighbor_score")
    )
    links = scored[0]["LinkSetDb"][0]["Link"]
    assert links and all(int(link["Score"]) >= 0 for link in links)
    kept = read(
        Entrez.elink(
            dbfrom="pubmed", id="90000001", linkname="pubmed_pubmed_citedin", cmd="neighbor_history"
        )
    )
    history = kept[0]["LinkSetDbHistory"][0]
    docs = read(
        Entrez.esummary(db="pubmed", webenv=kept[0]["WebEnv"], query_key=history["QueryKey"])
    )
    assert sorted(d["Id"] for d in docs) == ["90000002", "90000003"]
    url = f"{base}/entrez/eutils/elink.fcgi?dbfrom=pubmed&id=90000003&retmode=json"
    url += "&linkname=pubmed_pubmed_refs&api_key=" + str(Entrez.api_key)
    with urllib.request.urlopen(url) as answer:
        body = json.load(answer)
    assert body["linksets"][0]["linksetdbs"][0]["links"] == ["90000010", "90000001", "90000002"]


def test_esearch_count_translation_and_notes_are_search_count_s(home: Path) -> None:
    """esearch runs the one plan of ``search --count``: the same count and the same notes
    (here: a MeSH tag searched as words without MeSH installed)."""
    term = "heart failure[mh] AND cardiac[ti]"
    counted = cli_json(home, "search", term, "--count")
    found = read(Entrez.esearch(db="pubmed", term=term, sort="relevance"))
    assert int(found["Count"]) == counted["count"]
    assert counted["notes"]  # the test needs a note to compare
    assert list(found.get("WarningList", {}).get("OutputMessage", [])) == counted["notes"]
