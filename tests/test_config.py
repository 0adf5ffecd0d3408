"""`config.toml` is checked when it is read: a setting medsearch cannot use is one line
naming the file, the setting and what it takes, whichever command reads it first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import shared_data

from medsearch.cli import main
from medsearch.config import load_ingest_settings, load_settings
from medsearch.errors import ConfigError
from medsearch.paths import Paths

EX_CONFIG = 78


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lexical home of six real PubMed records; each test copies its config in."""
    home = tmp_path_factory.mktemp("config") / "home"
    records = sorted(shared_data("pubmed", "biopython-1.88").glob("pubmed*.xml"))
    code, _, err = cli(home, "ingest", *map(str, records), "--no-encode", "--jobs", "0")
    assert code == 0, err
    return home


@pytest.fixture
def home(corpus: Path) -> Iterator[Path]:
    yield corpus
    Paths(corpus).config_file.unlink(missing_ok=True)


BAD = [
    ("search = 5\n", "search must be a table ([search] on a line of its own"),
    ("ingest = [1, 2]\n", "ingest must be a table ([ingest] on a line of its own"),
    (
        '[search]\nlexical_candidates = "many"\n',
        "[search] lexical_candidates must be a whole number from 1 to 2,147,483,647, not"
        ' lexical_candidates = "many"',
    ),
    ("[search]\nrrf_k = -60\n", "[search] rrf_k must be a whole number from 0 to 2,147,483,647"),
    (
        "[search]\ndense_candidates = 0\n",
        "[search] dense_candidates must be a whole number from 1 to",
    ),
    ("[search]\ndelta_depth = -1\n", "[search] delta_depth must be a whole number from 1 to"),
    ("[search]\nrerank_head_cpu = 2.5\n", "[search] rerank_head_cpu must be a whole number"),
    ('[search]\nfusion = "magic"\n', '[search] fusion must be "rrf" or "score"'),
    (
        '[search]\nrerank = "always"\n',
        '[search] rerank must be "auto", "delta", "cross" or "none", not rerank = "always"',
    ),
    ('[search]\ndevice = "tpu"\n', '[search] device must be "auto", "cpu", "cuda", "cuda:N"'),
    ("[search]\nrerank_int8 = 1\n", "[search] rerank_int8 must be true or false"),
    (
        '[search]\nprofile = "medcpt2"\n',
        '[search] profile "medcpt2" is not a model profile (did you mean medcpt?); the'
        " profiles are medcpt, minilm",
    ),
    (
        "[search]\nrrf = 30\n",
        "unknown setting 'rrf' in [search] (did you mean rrf_k?); the settings are profile,",
    ),
    ("[serach]\nrrf_k = 30\n", "unknown table [serach] (did you mean [search]?)"),
    (
        "[ingest]\ndelete_download = true\n",
        "unknown setting 'delete_download' in [ingest] (did you mean delete_downloads?)",
    ),
    ('[ingest]\nkeep_free_bytes = "lots"\n', "[ingest] keep_free_bytes must be a whole number"),
    ("[ingest]\ncpu_encode_minutes = nan\n", "[ingest] cpu_encode_minutes must be a number from"),
    ("[search]\nrrf_k = 1" + "0" * 30 + "\n", "[search] rrf_k must be a whole number from 0 to"),
    (
        '[search]\ndevice = "cuda:99999999999999999999"\n',
        '[search] device must be "auto", "cpu", "cuda", "cuda:N"',
    ),
]


@pytest.mark.parametrize(("config", "message"), BAD, ids=[" ".join(c.split()) for c, _ in BAD])
@pytest.mark.parametrize(
    "command", [("search", "sperm"), ("ingest", "--no-encode")], ids=lambda c: c[0]
)
def test_a_setting_medsearch_cannot_use_is_named_on_one_line(
    home: Path, config: str, message: str, command: tuple[str, ...]
) -> None:
    """Every mistake is refused by whichever command reads the file (the search and
    the ingest read both tables), not silently ignored or left to fail deep inside a
    search with an internal error."""
    file = Paths(home).config_file
    file.write_text(config, encoding="utf-8")
    code, out, err = cli(home, *command)
    assert (code, out) == (EX_CONFIG, "")
    [line] = err.splitlines()
    assert line.startswith(f"medsearch: error: {file}: "), line
    assert message in line


def test_a_config_file_that_is_not_utf8_is_named(home: Path) -> None:
    file = Paths(home).config_file
    file.write_bytes('[search]\nfusion = "r\xe9f"\n'.encode("latin-1"))
    for command in (("search", "sperm"), ("models", "list")):
        code, _, err = cli(home, *command)
        assert code == EX_CONFIG
        assert (
            err
            == f"medsearch: error: {file} is not UTF-8 text (byte 20 is not): save it as UTF-8\n"
        )


def test_every_setting_at_its_limits_is_accepted(home: Path) -> None:
    """The edges of each range, a user's own profile and a device this machine may not
    have (only its form is checked) are fine, and a search runs with them."""
    Paths(home).config_file.write_text(
        "[search]\n"
        'profile = "mine"\n'
        'device = "cuda:0,1"\n'
        "lexical_candidates = 1\n"
        "dense_candidates = 1\n"
        "rrf_k = 0\n"
        'fusion = "score"\n'
        "rerank_head_gpu = 0\n"
        "rerank_head_cpu = 0\n"
        'index_factory = "IVF64,PQ16"\n'
        "sentence_candidates = 0\n"
        'rerank = "none"\n'
        "delta_depth = 1\n"
        "rerank_int8 = false\n"
        "[ingest]\n"
        "keep_free_bytes = 0\n"
        "delete_downloads = false\n"
        "[profiles.mine]\n"
        'query_model = "/models/none"\n'
        "symmetric = true\n"
        "[keys]\n"
        '"main.filters" = "ctrl+l"\n',
        encoding="utf-8",
    )
    settings = load_settings(Paths(home))
    assert (settings.profile, settings.fusion, settings.rrf_k) == ("mine", "score", 0)
    assert load_ingest_settings(Paths(home)).keep_free_bytes == 0
    code, _, err = cli(home, "search", "sperm", "--json")
    assert code == 0, err


def test_the_error_is_a_config_error_for_the_tui_too(home: Path) -> None:
    """The app shows a MedsearchError as a notification: a bad file must be one."""
    Paths(home).config_file.write_text('[search]\nfusion = "magic"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[search\] fusion must be"):
        load_settings(Paths(home))
