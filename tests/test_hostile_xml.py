"""Hostile and broken XML: what an input file may do to the machine that ingests it.

A file from anywhere (a mirror, a colleague, a download gone wrong) must never read
files or the network on its behalf, never take the memory, and never leave anything
outside the data home. Each case below runs a real ingest (store, lexical index) in a
child process of its own, so that the child's peak memory is the parse's alone, and
checks the outcome: the file fails with one line naming it and where it broke (or its
records are kept and nothing else), the peak stays under :data:`PEAK_MB`, and nothing
outside the data home changed. A watchdog in the child stops it as soon as it passes
:data:`PEAK_MB`, so a parser that does not keep to its limits fails the test in a
second instead of taking the machine's memory.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from httpserver import LocalServer

from ingest.pubmed_xml import parse_file
from ingest.sources import MAX_FIELD_CHARS, MAX_RECORD_ELEMENTS
from medsearch.errors import ParseError
from medsearch.index.lexical.index import LexicalIndex
from medsearch.paths import Paths
from medsearch.store import Store

PEAK_MB = 500
"""The child's peak resident memory, interpreter, store and lexical index included
(~60 MB before the first file). Without the parser's limits each case below passes it
(a 200 MB title, 48 MB of elements kept after the last record: GBs)."""

CHILD = r"""
import json, os, resource, sys, threading, time
from pathlib import Path

limit_mb = float(sys.argv[1])

def peak_mb():
    # VmHWM is this program's own peak: ru_maxrss would also count what the test process
    # held when it forked this one (Linux keeps the larger across exec).
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 1024)

def watch():
    while True:
        if peak_mb() > limit_mb:
            print(json.dumps({"peak_mb": peak_mb(), "stopped": True}), flush=True)
            os._exit(3)
        time.sleep(0.01)

threading.Thread(target=watch, daemon=True).start()
from ingest.pipeline import Ingestor
from medsearch.paths import Paths

with Ingestor(Paths(Path(sys.argv[2])), jobs=0) as ingestor:
    summary = ingestor.run([Path(p) for p in sys.argv[3:]])
print(json.dumps({"peak_mb": peak_mb(), "stopped": False, "summary": summary.to_dict()}))
"""

RECORD = (
    "<PubmedArticle><MedlineCitation><PMID>{pmid}</PMID><Article>"
    "<ArticleTitle>{title}</ArticleTitle></Article></MedlineCitation></PubmedArticle>\n"
)


def record(pmid: int, title: str = "Aspirin after stroke") -> bytes:
    return RECORD.format(pmid=pmid, title=title).encode()


@dataclass(frozen=True)
class Outcome:
    """What the child's ingest did: its summary, and its peak memory in MB."""

    summary: dict[str, object]
    peak_mb: float

    @property
    def failure(self) -> str:
        """The one failure line of a run over one file that failed."""
        failures = self.summary["failures"]
        assert isinstance(failures, list) and len(failures) == 1, failures
        error = failures[0]["error"]
        assert isinstance(error, str)
        return error


def files_outside_home(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` but the data home, with its size and modification time."""
    home = root / "home"
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file() and home not in path.parents
    }


def ingest_alone(root: Path, *inputs: Path) -> Outcome:
    """Ingest ``inputs`` into ``root/home`` in a child process, working in an empty folder
    with an empty temporary folder, and check that it wrote nothing outside the home."""
    work, scratch = root / "cwd", root / "tmp"
    work.mkdir(exist_ok=True)
    scratch.mkdir(exist_ok=True)
    before = files_outside_home(root)
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(PEAK_MB), str(root / "home"), *map(str, inputs)],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=120,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    assert not report.get("stopped"), f"the ingest passed {PEAK_MB} MB: {report}"
    assert done.returncode == 0, done.stderr[-2000:]
    assert files_outside_home(root) == before  # the input untouched, nothing new beside it
    assert not any(scratch.iterdir()) and not any(work.iterdir())
    return Outcome(report["summary"], report["peak_mb"])


def stored_pmids(root: Path) -> set[int]:
    with Store(Paths(root / "home").store) as store:
        return {a.pmid for batch in store.iter_articles(batch=100) for a in batch}


def found_by_search(root: Path, query: str) -> set[int]:
    index = LexicalIndex.open(Paths(root / "home").lexical_index, create=False)
    try:
        return {hit.pmid for hit in index.search(query, k=10).hits}
    finally:
        index.close()


def gzip_members(*parts: tuple[bytes, int]) -> bytes:
    """A gzip file of ``(bytes, times)`` parts, each part one gzip member repeated: gzip
    readers join members, so 1,000 copies of a 1 KB member of 1 MB of ``<x/>`` inflate
    to 1 GB, built without ever holding or compressing that gigabyte."""
    return b"".join(gzip.compress(data, compresslevel=9) * times for data, times in parts)


def test_an_external_entity_never_reads_a_file_outside_the_data_home(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("zyxwvutsrq medsearch canary\n", encoding="utf-8")
    hostile = tmp_path / "xxe.xml"
    hostile.write_bytes(
        b'<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet [\n'
        b'  <!ENTITY leak SYSTEM "' + secret.as_uri().encode() + b'">\n]>\n'
        b"<PubmedArticleSet>\n"
        + record(31000001, "Aspirin &leak; after stroke")
        + b"</PubmedArticleSet>\n"
    )
    outcome = ingest_alone(tmp_path, hostile)
    assert outcome.summary["failed"] == 0 and outcome.summary["articles"] == 1
    with Store(Paths(tmp_path / "home").store) as store:
        article = store.get(31000001)
    assert article.title == "Aspirin after stroke"  # the reference dropped, not resolved
    assert "zyxwvutsrq" not in article.to_json()
    assert found_by_search(tmp_path, "zyxwvutsrq") == set()
    assert found_by_search(tmp_path, "aspirin") == {31000001}
    assert outcome.peak_mb < PEAK_MB


def test_a_remote_dtd_and_remote_entities_are_never_fetched(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "pubmed.dtd").write_text('<!ENTITY remote "fetched from the network">\n')
    (served / "more.ent").write_text('<!ENTITY more "fetched as well">\n')
    server = LocalServer(served)
    try:
        hostile = tmp_path / "remote.xml"
        hostile.write_bytes(
            f'<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet SYSTEM "{server.url}pubmed.dtd" [\n'
            f'  <!ENTITY % more SYSTEM "{server.url}more.ent"> %more;\n]>\n'.encode()
            + b"<PubmedArticleSet>\n"
            + record(31000002, "Statins &remote; &more; and LDL")
            + b"</PubmedArticleSet>\n"
        )
        outcome = ingest_alone(tmp_path, hostile)
        assert server.requests == []
    finally:
        server.close()
    assert outcome.summary["failed"] == 0
    with Store(Paths(tmp_path / "home").store) as store:
        assert store.get(31000002).title == "Statins and LDL"
    assert outcome.peak_mb < PEAK_MB


def test_an_entity_expansion_bomb_fails_the_file_at_once(tmp_path: Path) -> None:
    """Billion laughs: ten levels of ten references, 10^9 copies of "lol" if expanded."""
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    )
    hostile = tmp_path / "laughs.xml"
    hostile.write_bytes(
        f'<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet [{entities}]>\n'.encode()
        + b"<PubmedArticleSet>\n"
        + record(31000003, "&lol9;")
        + b"</PubmedArticleSet>\n"
    )
    outcome = ingest_alone(tmp_path, hostile)
    assert outcome.failure.startswith(f"{hostile}: malformed XML: ")
    assert "entity" in outcome.failure and "at line" in outcome.failure
    assert stored_pmids(tmp_path) == set()
    assert outcome.peak_mb < PEAK_MB


def test_a_gzip_bomb_of_elements_that_are_no_records_fails_before_it_inflates(
    tmp_path: Path,
) -> None:
    bomb = tmp_path / "pubmed26n0901.xml.gz"
    bomb.write_bytes(
        gzip_members(
            (b"<PubmedArticleSet>\n" + record(31000004), 1),
            (b"<x/>" * 256 * 1024, 1000),  # 1 GB of elements after the only record
        )
    )
    assert bomb.stat().st_size < 2_000_000
    outcome = ingest_alone(tmp_path, bomb)
    assert outcome.failure == f"{bomb}: over 1 MB of XML outside any PubMed record at line 3"
    assert stored_pmids(tmp_path) == set()  # the file is rolled back whole
    assert outcome.peak_mb < PEAK_MB


def test_junk_after_the_last_record_fails_the_file_and_is_not_kept_meanwhile(
    tmp_path: Path,
) -> None:
    hostile = tmp_path / "junk.xml.gz"
    with gzip.open(hostile, "wb", compresslevel=1) as out:
        out.write(b"<PubmedArticleSet>\n" + b"".join(record(31000010 + i) for i in range(3)))
        out.write(b"<junk>\n")
        for _ in range(48):
            out.write(b"<x/>" * 256 * 1024)  # 48 MB: 12M elements, GBs as lxml nodes
        out.write(b"</junk>\n</PubmedArticleSet>\n")
    outcome = ingest_alone(tmp_path, hostile)
    assert outcome.failure == f"{hostile}: over 1 MB of XML outside any PubMed record at line 5"
    assert stored_pmids(tmp_path) == set()
    assert outcome.peak_mb < PEAK_MB


def test_bytes_that_are_not_utf8_fail_with_the_line(tmp_path: Path) -> None:
    broken = tmp_path / "latin1.xml"
    broken.write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?>\n<PubmedArticleSet>\n'
        + record(31000020)
        + record(31000021, "Cafe au lait spots")
        .replace(b"<Article>", b"\n<Article>")
        .replace(b"Cafe", b"Caf\xe9")  # Latin-1, in a file that says UTF-8
        + b"</PubmedArticleSet>\n"
    )
    outcome = ingest_alone(tmp_path, broken)
    assert outcome.failure.startswith(f"{broken}: malformed XML: ")
    assert outcome.failure.endswith("at line 5")
    assert stored_pmids(tmp_path) == set()
    assert outcome.peak_mb < PEAK_MB


def test_a_huge_text_node_fails_before_it_is_built(tmp_path: Path) -> None:
    """A 200 MB title (a 200 KB file): libxml2 stops a text node at 10 MB."""
    hostile = tmp_path / "title.xml.gz"
    head = b"<PubmedArticleSet>\n<PubmedArticle><MedlineCitation><PMID>31000030</PMID>"
    hostile.write_bytes(
        gzip_members(
            (head + b"<Article><ArticleTitle>", 1),
            (b"a" * 1024 * 1024, 200),
            (b"</ArticleTitle></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>", 1),
        )
    )
    outcome = ingest_alone(tmp_path, hostile)
    assert outcome.failure.startswith(f"{hostile}: malformed XML: ")
    assert "too long" in outcome.failure and "at line 2" in outcome.failure
    assert stored_pmids(tmp_path) == set()
    assert outcome.peak_mb < PEAK_MB


# -- the limits themselves, through the parser alone ---------------------------------------


def parse_error(path: Path) -> ParseError:
    with pytest.raises(ParseError) as info:
        for _ in parse_file(path):
            pass
    assert info.value.path == str(path)
    return info.value


def hostile_file(path: Path, *parts: bytes) -> Path:
    path.write_bytes(b"<PubmedArticleSet>\n" + b"".join(parts) + b"</PubmedArticleSet>\n")
    return path


def test_a_field_past_the_limit_fails_the_file_naming_the_record(tmp_path: Path) -> None:
    title = "x" * (MAX_FIELD_CHARS + 1)  # 1 MB: under libxml2's own 10 MB
    path = hostile_file(tmp_path / "t.xml", record(31000040), b"\n", record(31000041, title))
    error = parse_error(path)
    assert error.problem == (
        "the title of PMID 31000041 is longer than 1,000,000 characters,"
        " which no real PubMed record comes near"
    )
    assert error.position == "line 4"


def test_a_record_of_too_many_elements_fails_the_file(tmp_path: Path) -> None:
    many = b"<x/>" * (MAX_RECORD_ELEMENTS + 10_000)
    path = hostile_file(tmp_path / "e.xml", record(31000050).replace(b"</PMID>", b"</PMID>" + many))
    error = parse_error(path)
    assert error.problem == (
        "a record of over 500,000 XML elements, which no real PubMed record comes near"
    )
    assert error.position == "line 2"


def test_nesting_deeper_than_libxml2_allows_fails_with_a_plain_message(tmp_path: Path) -> None:
    deep = b"<a>" * 300 + b"</a>" * 300
    path = hostile_file(tmp_path / "d.xml", record(31000060).replace(b"</PMID>", b"</PMID>" + deep))
    error = parse_error(path)
    assert error.problem.startswith("malformed XML: Excessive depth in document")
    assert "XML_PARSE_HUGE" not in error.problem
    assert error.problem.endswith("a limit no real PubMed file comes near")


def test_small_junk_between_records_is_dropped_and_the_records_kept(tmp_path: Path) -> None:
    junk = b"<x/>" * 100_000  # 400 KB between two records: under the limit
    path = hostile_file(tmp_path / "j.xml", record(31000070), junk, record(31000071), junk)
    assert [r.pmid for r in parse_file(path)] == [31000070, 31000071]  # type: ignore[union-attr]
