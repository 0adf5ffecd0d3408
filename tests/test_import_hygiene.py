"""Start-up stays fast and the core stays UI-free: checked in a fresh interpreter each time."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "faiss", "textual", "tantivy")

LIGHT_MODULES = [
    "medsearch.cli",
    "medsearch.paths",
    "medsearch.config",
    "medsearch.records",
    "medsearch.errors",
]

CORE_MODULES = [
    "medsearch.store",
    "medsearch.retrieval.searcher",
    "ingest.pipeline",
]


def loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return {name.split(".")[0] for name in out.split()}


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_light_modules_import_no_heavy_libraries(module: str) -> None:
    loaded = loaded_after_import(module)
    assert not loaded & set(HEAVY), f"{module} pulls in {sorted(loaded & set(HEAVY))}"


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_never_imports_textual(module: str) -> None:
    assert "textual" not in loaded_after_import(module)


def test_cli_help_runs_without_heavy_imports() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from medsearch.cli import main\n"
        "r = CliRunner().invoke(main, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "module", ["medsearch.rerank.scorer", "medsearch.rerank.loading", "medsearch.rerank.plan"]
)
def test_delta_reranking_at_search_time_needs_neither_torch_nor_gensim(module: str) -> None:
    """A lexical-only laptop reranks with NumPy; torch and gensim are for training."""
    loaded = loaded_after_import(module)
    assert not loaded & {"torch", "gensim", "transformers", "textual"}
