"""Start-up stays fast, the core stays UI-free, and the query side never needs ``ingest``.

Heavy imports are checked in a fresh interpreter each time; the ``ingest`` rule is read
from the source, because those imports sit inside functions and only run when called.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "medsearch"

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


# The ingest and update commands and `eval` (which builds its own corpus) run the offline
# pipeline; nothing else in the core may reach into it.
INGEST_CALLERS = {
    "commands/ingest.py",
    "commands/ingest_clock.py",
    "commands/mesh.py",
    "commands/quickstart.py",
    "commands/render.py",
    "commands/update.py",
    "evaluate.py",
}


def imported_modules(source: Path) -> set[str]:
    """Every absolute module ``source`` imports, at top level or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def test_only_the_ingest_command_and_eval_import_the_ingest_pipeline() -> None:
    """Searching, the TUI and `cite` work in an install without the offline pipeline."""
    importers = {
        source.relative_to(PACKAGE).as_posix()
        for source in PACKAGE.rglob("*.py")
        if any(n == "ingest" or n.startswith("ingest.") for n in imported_modules(source))
    }
    assert importers <= INGEST_CALLERS, f"only {sorted(INGEST_CALLERS)} may import ingest"
    assert importers, "the scan found no importer at all: is PACKAGE right?"


def test_the_import_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "lazy.py"
    source.write_text(
        "import importlib\n"
        "def f():\n"
        "    from ingest.sentences import split_sentences\n"
        "    return importlib.import_module('ingest.text')\n",
        encoding="utf-8",
    )
    assert {"ingest.sentences", "ingest.text"} <= imported_modules(source)


def test_the_ingest_pipeline_reports_through_progress_not_the_cli() -> None:
    """`eval`, the benchmarks and scripts run the same ingest as the command, so the
    pipeline never prints through click nor reaches back into the commands."""
    pipeline = PACKAGE.parent / "ingest"
    upward = {
        source.name: sorted(
            n
            for n in imported_modules(source)
            if n == "click" or n.startswith("medsearch.commands")
        )
        for source in pipeline.glob("*.py")
    }
    assert {name: found for name, found in upward.items() if found} == {}
    assert "run.py" in upward
