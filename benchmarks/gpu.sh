#!/usr/bin/env bash
# The benchmarks that need a GPU machine (one CUDA GPU) or many cores (16).
#
# Run from the repository root of a checkout on that machine:
#
#   OUT=results bash benchmarks/gpu.sh          # check: the most wanted figures, < 10 min
#   OUT=results bash benchmarks/gpu.sh encode   # the vector stage in full, ~7 min
#   OUT=results bash benchmarks/gpu.sh cores    # ingest and sharded lexical search, ~5 min
#                                               #   (many cores; no GPU needed)
#
# What the machine needs:
# - Python 3.11 (PY, default python3) with torch built for CUDA and transformers, and the
#   project's dependencies. Where tantivy, faiss, orjson, zstandard, platformdirs, regex
#   or isal cannot be imported and no package index can be reached, put their wheels in
#   `.whl/` (built for that machine's Python with `pip wheel`): they are installed into
#   /tmp/site. isal lets the parsers inflate with ISA-L (without it they use zlib, ~10 us
#   more an article; machine.txt says which ran).
# - For `check` and `encode`: a saved bert-base-uncased tokenizer in `.gpu/vocab/` and a
#   BEIR corpus as `.gpu/scifact.jsonl` (SciFact's corpus.jsonl). For `check`'s last
#   step: real PubMed files in `.gpu/pubmed/`. `.gpu/` and `.whl/` are git-ignored.
#
# Everything is written to $OUT (default /tmp/out), one log per step:
#
# check, each step under its own time limit and all under DEADLINE seconds (default
# 560), so a slow step costs the steps after it, never the results before it:
#   tests.txt          1. the `gpu`-marked tests: rows ordered on the device, GPU lists
#                         and codebooks, per-thread devices, `auto` encoding on a GPU
#   ingest-8.txt       2. `python -m benchmarks.ingest --jobs 8` over CORE_ARTICLES
#                         synthetic articles (default 600,000) in files of 30,000: the
#                         steady rate (target >= 10,000 articles/s)
#   encode.txt/.json   3. the compiled vector stage at ENC_ARTICLES (default 100,000), as
#                         it runs at PubMed size, beside the bare forward of the first 20K
#                         articles eager and compiled
#   ingest-real.txt    4. step 2 on REAL_ARTICLES (default 480,000) real records cycled
#   commands/          5. `commands` below at COMMAND_ARTICLES (default 60,000) when
#                         time is left
#   machine.txt, steps.txt
#
# commands (`python -m benchmarks.commands`, issue 42: the user's commands, ~7 min):
#   commands/ingest.json   `medsearch ingest DIR --models rand --device cuda --json` over
#                          COMMAND_ARTICLES (default 300,000) real records of .gpu/pubmed
#                          cycled into files of 20,000, with a MedCPT-shaped random profile
#                          (12 x 768, .gpu/vocab's tokenizer) saved locally: its stages,
#                          wall, peak RSS and nvidia-smi sampled every 2 s (gpu-samples.csv:
#                          idle seconds before the first busy sample, share >= 85% after)
#   commands/harness.txt   `python -m benchmarks.ingest --real .gpu/pubmed` on the same count
#   commands/search.json   `medsearch search 'statin myopathy risk' --json` in each mode on
#                          cpu and cuda (median of 3 after a warm-up run)
#   A trial on any machine: PY=.venv/bin/python OUT=/tmp/out COMMAND_ARTICLES=2000 \
#     COMMAND_EXTRA="--per-file 500 --layers 2 --hidden 64 --device cpu" \
#     PUBMED=../shared/data/pubmed bash benchmarks/gpu.sh commands
#
# encode (`python -m benchmarks.encode gpu`):
#   machine.txt        the GPU, its memory and driver, the core count
#   encode.txt/.json   the stage at ARTICLES (default 60,000) eager and compiled, the bare
#                      forward eager and compiled, the token-budget sweep, the rerank head,
#                      and sentence search re-scoring 100 / 400 / 1,600 candidates
#   tests.txt          the `gpu`-marked tests
#   oom.txt            a small stage under a memory cap: the batch back-off at work
#   Settings: ARTICLES; EXTRA="..." replaces the token-budget sweep (e.g. "--bare-articles
#   30000 --skip-rerank" for a larger ARTICLES whose steady rates are the point);
#   ONLY_ENCODE=1 skips the tests and the OOM run; STAGE="" runs the stage once, compiled
#   or not as MEDSEARCH_TORCH_COMPILE says; COMPILE="" leaves out the compiled bare
#   forward; ENCODE_TIMEOUT (default 380 s). A compiled stage long enough to pay back
#   its compile (~5 minutes):
#     ARTICLES=400000 STAGE="" EXTRA="--bare-articles 20000 --skip-rerank" ONLY_ENCODE=1 \
#       MEDSEARCH_TORCH_COMPILE=1 ENCODE_TIMEOUT=420 bash benchmarks/gpu.sh encode
#
# cores (`python -m benchmarks.ingest` and `python -m benchmarks.lexical shards|long`):
#   machine.txt        cores, imports, inflate
#   ingest-JOBS.txt    ingest with JOBS parser processes (default 8; "8 12" runs once per
#                      count) over ARTICLES (default 480,000; 0: none) in files of
#                      PER_FILE (30,000), the reference loops over the first two files;
#                      the steady rate (files after the first JOBS) is the figure for a
#                      full baseline (use ARTICLES >= 720000). REAL=DIR cycles the real
#                      records of DIR instead (they parse ~1.65x slower); WRITER_THREADS
#                      sets tantivy's indexing threads.
#   download_ingest.txt  with DOWNLOAD=N: `ingest --download` over N files from a local
#                      server paced at DLRATE MB/s a connection, 2 connections (N=8 needs
#                      DLTIME >= 200)
#   lexical.txt        LEXDOCS documents (default 1,000,000; 0: ingest only) in SHARDS
#                      shards (default 8), each built by its own process and searched from
#                      one thread each (target top-1000 p95 <= 150 ms at 10M); 10M fits a
#                      run of its own: LEXDOCS=10000000 LEXTIME=480 ARTICLES=0
#   long_queries.txt   queries of 3-200 words on the same shards, every word ranked
#                      against the WordBudget
#   Time limits (seconds): INGESTTIME, LEXTIME, LONGTIME, DLTIME. A small trial on any
#   machine:
#     PY=.venv/bin/python OUT=/tmp/out ARTICLES=4000 PER_FILE=1000 LEXDOCS=20000 \
#       bash benchmarks/gpu.sh cores
set -uo pipefail
MODE=${1:-check}
PY=${PY:-python3}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c "import tantivy, faiss, orjson, zstandard, platformdirs, regex, isal" 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
GPU_TESTS=(tests/test_batching.py tests/test_coarse.py tests/test_encode_pipeline.py)

cores() (
  set -e
  local articles=${ARTICLES:-480000} per_file=${PER_FILE:-30000} lexdocs=${LEXDOCS:-1000000}
  {
    echo "cores: $(nproc)"
    "$PY" -c "import lxml, tantivy, faiss, zstandard, orjson, numpy; print('imports ok')"
    "$PY" -c "import isal" 2> /dev/null && echo "inflate: isal" || echo "inflate: zlib"
  } | tee "$OUT/machine.txt"
  for jobs in ${JOBS:-8}; do
    [ "$articles" = 0 ] || timeout "${INGESTTIME:-300}" "$PY" -m benchmarks.ingest \
      --articles "$articles" --jobs "$jobs" --files $(((articles + per_file - 1) / per_file)) \
      --reference-files 2 --repeat 1 ${REAL:+--real "$REAL"} \
      ${WRITER_THREADS:+--writer-threads "$WRITER_THREADS"} 2>&1 | tee "$OUT/ingest-$jobs.txt"
  done
  if [ "${DOWNLOAD:-0}" != 0 ]; then
    local first_jobs=${JOBS:-8}
    timeout "${DLTIME:-400}" "$PY" -m benchmarks.ingest download --files "$DOWNLOAD" \
      --articles "$per_file" --rate "${DLRATE:-12.5}" --connections 2 \
      --jobs "${first_jobs%% *}" ${REAL:+--real "$REAL"} 2>&1 \
      | tee "$OUT/download_ingest.txt" || true
  fi
  [ "$lexdocs" = 0 ] && exit 0
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  timeout "${LEXTIME:-240}" "$PY" -m benchmarks.lexical shards --docs "$lexdocs" \
    --shards "${SHARDS:-8}" --dir "$work/lexical" --queries 30 --processes 2>&1 \
    | grep -v "  indexed" | tee "$OUT/lexical.txt"
  timeout "${LONGTIME:-120}" "$PY" -m benchmarks.lexical long --dir "$work/lexical" \
    --queries 10 2>&1 | tee "$OUT/long_queries.txt" || true
)

encode() {
  local data=(--tokenizer .gpu/vocab --corpus .gpu/scifact.jsonl)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
    | tee "$OUT/machine.txt"
  echo "cores: $(nproc)" | tee -a "$OUT/machine.txt"
  # shellcheck disable=SC2086
  timeout "${ENCODE_TIMEOUT:-380}" "$PY" -m benchmarks.encode gpu \
    --articles "${ARTICLES:-60000}" --skip-st ${COMPILE---compile} ${STAGE---compile-stage} \
    ${EXTRA:---budget-sweep} "${data[@]}" --json "$OUT/encode.json" 2>&1 \
    | grep -v "^W[0-9]\|Writing model" | tee "$OUT/encode.txt"
  [ "${ONLY_ENCODE:-0}" = 1 ] && return 0
  timeout 90 "$PY" -m pytest -q -p no:cacheprovider -m gpu -o addopts="" "${GPU_TESTS[@]}" 2>&1 \
    | tail -15 | tee "$OUT/tests.txt"
  timeout 60 "$PY" -m benchmarks.encode gpu --articles 3000 --skip-st --skip-rerank \
    --memory-fraction 0.012 "${data[@]}" --json "$OUT/oom.json" 2>&1 | tail -12 \
    | tee "$OUT/oom.txt"
}

commands() {
  mkdir -p "$OUT/commands"
  local vocab=()
  [ -d .gpu/vocab ] && vocab=(--vocab .gpu/vocab)
  timeout "${COMMANDTIME:-540}" "$PY" -m benchmarks.commands \
    --articles "${COMMAND_ARTICLES:-300000}" --pubmed "${PUBMED:-.gpu/pubmed}" \
    --out "$OUT/commands" "${vocab[@]}" ${COMMAND_EXTRA:-} 2>&1 | tee "$OUT/commands/commands.txt"
}

check() {
  local deadline=${DEADLINE:-560}
  # at most $1 seconds, and never past the deadline (less 10 s to hand the files back)
  budget() {
    local left=$((deadline - SECONDS - 10))
    ((left < 1)) && left=1
    ((left < $1)) && echo "$left" || echo "$1"
  }
  step() { echo "== $1 at ${SECONDS}s" | tee -a "$OUT/steps.txt"; }
  step "tests"
  timeout "$(budget 100)" "$PY" -m pytest -q -p no:cacheprovider -m gpu -o addopts="" \
    "${GPU_TESTS[@]}" tests/test_cli_vectors.py 2>&1 | tail -15 | tee "$OUT/tests.txt"
  step "ingest, synthetic"
  mkdir -p "$OUT/cores"
  (OUT="$OUT/cores" ARTICLES=${CORE_ARTICLES:-600000} LEXDOCS=0 JOBS=8 \
    INGESTTIME="$(budget 180)" cores > /dev/null 2>&1)
  cp "$OUT/cores/ingest-8.txt" "$OUT/cores/machine.txt" "$OUT/" 2> /dev/null
  rm -rf "$OUT/cores"
  tail -12 "$OUT/ingest-8.txt"
  step "encode, compiled"
  mkdir -p "$OUT/enc"
  (OUT="$OUT/enc" ARTICLES=${ENC_ARTICLES:-100000} STAGE="" ONLY_ENCODE=1 \
    ENCODE_TIMEOUT="$(budget 300)" EXTRA="--bare-articles 20000 --skip-rerank --skip-sentence-search" \
    MEDSEARCH_TORCH_COMPILE=1 encode > /dev/null 2>&1)
  cp "$OUT/enc/encode.txt" "$OUT/enc/encode.json" "$OUT/" 2> /dev/null
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$OUT/machine.txt"
  rm -rf "$OUT/enc"
  tail -40 "$OUT/encode.txt"
  step "ingest, real records"
  if (($(budget 150) > 60)); then
    mkdir -p "$OUT/real"
    (OUT="$OUT/real" ARTICLES=${REAL_ARTICLES:-480000} LEXDOCS=0 JOBS=8 REAL=.gpu/pubmed \
      INGESTTIME="$(budget 150)" cores > /dev/null 2>&1)
    cp "$OUT/real/ingest-8.txt" "$OUT/ingest-real.txt" 2> /dev/null
    rm -rf "$OUT/real"
    tail -12 "$OUT/ingest-real.txt"
  fi
  step "commands"
  if (($(budget 200) > 120)); then
    (COMMAND_ARTICLES=${COMMAND_ARTICLES:-60000} COMMANDTIME="$(budget 200)" commands > /dev/null 2>&1)
    tail -14 "$OUT/commands/commands.txt"
  fi
  step "done"
  cat "$OUT/steps.txt" "$OUT/machine.txt"
}

case "$MODE" in
  check | encode | cores | commands) "$MODE" ;;
  *)
    echo "usage: bash benchmarks/gpu.sh [check|encode|cores|commands]  (the header says what each runs)" >&2
    exit 2
    ;;
esac
