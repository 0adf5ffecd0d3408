#!/usr/bin/env bash
# The GPU machine's figures in one run of under ten minutes, most wanted first.
#
# Run on a machine with one CUDA GPU and 16 cores, from the repository root:
#
#   OUT=results bash benchmarks/device_check.sh
#
# Needs what device_encode.sh needs (`.gpu/vocab/`, `.gpu/scifact.jsonl`, the wheels in
# `.whl/` where packages are missing), and real PubMed files in `.gpu/pubmed/` for step 4.
# Each step runs under its own time limit and all under DEADLINE seconds (default 560),
# so a slow step costs the ones after it, never the results before it; $OUT keeps each
# step's log:
#   1. the gpu-marked tests (tests.txt): rows ordered on the device, GPU lists and
#      codebooks, per-thread devices, `auto` encoding a large backlog where there is a GPU;
#   2. `benchmarks.ingest --jobs 8` over CORE_ARTICLES synthetic articles (default 600,000)
#      in files of 30,000 (ingest-8.txt: the steady rate, target >= 10,000 articles/s);
#   3. the compiled vector stage at ENC_ARTICLES (default 100,000), as it runs at PubMed
#      size, with the bare forward of the first 20K articles eager and compiled (encode.txt);
#   4. step 2 on REAL_ARTICLES (default 480,000) real PubMed records cycled
#      (ingest-real.txt).
set -uo pipefail
DEADLINE=${DEADLINE:-560}
. benchmarks/device_env.sh
# at most $1 seconds, and never past the deadline (less 10 s to hand the files back)
budget() {
  local left=$((DEADLINE - SECONDS - 10))
  ((left < 1)) && left=1
  ((left < $1)) && echo "$left" || echo "$1"
}
step() { echo "== $1 at ${SECONDS}s" | tee -a "$OUT/steps.txt"; }
step "tests"
timeout "$(budget 100)" "$PY" -m pytest -q -p no:cacheprovider -m gpu -o addopts="" \
  tests/test_batching.py tests/test_coarse.py tests/test_encode_pipeline.py \
  tests/test_cli_vectors.py 2>&1 | tail -15 | tee "$OUT/tests.txt"
step "ingest, synthetic"
mkdir -p "$OUT/cores"
OUT="$OUT/cores" ARTICLES=${CORE_ARTICLES:-600000} LEXDOCS=0 JOBS=8 \
  INGESTTIME="$(budget 180)" PY="$PY" bash benchmarks/device_cores.sh > /dev/null 2>&1
cp "$OUT/cores/ingest-8.txt" "$OUT/ingest-8.txt" 2> /dev/null
cp "$OUT/cores/machine.txt" "$OUT/machine.txt" 2> /dev/null
rm -rf "$OUT/cores"
tail -12 "$OUT/ingest-8.txt"
step "encode, compiled"
OUT="$OUT/enc" MEDSEARCH_TORCH_COMPILE=1 ARTICLES=${ENC_ARTICLES:-100000} STAGE="" \
  ONLY_ENCODE=1 ENCODE_TIMEOUT="$(budget 300)" PY="$PY" \
  EXTRA="--bare-articles 20000 --skip-rerank --skip-sentence-search" \
  bash benchmarks/device_encode.sh > /dev/null 2>&1
cp "$OUT/enc/encode.txt" "$OUT/enc/encode.json" "$OUT/" 2> /dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$OUT/machine.txt"
rm -rf "$OUT/enc"
tail -40 "$OUT/encode.txt"
step "ingest, real records"
if (($(budget 150) > 60)); then
  mkdir -p "$OUT/real"
  OUT="$OUT/real" ARTICLES=${REAL_ARTICLES:-480000} LEXDOCS=0 JOBS=8 REAL=.gpu/pubmed \
    INGESTTIME="$(budget 150)" PY="$PY" bash benchmarks/device_cores.sh > /dev/null 2>&1
  cp "$OUT/real/ingest-8.txt" "$OUT/ingest-real.txt" 2> /dev/null
  rm -rf "$OUT/real"
  tail -12 "$OUT/ingest-real.txt"
fi
step "done"
cat "$OUT/steps.txt" "$OUT/machine.txt"
