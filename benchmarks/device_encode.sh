#!/usr/bin/env bash
# The GPU figures: the vector stage of an ingest on one CUDA GPU (~7 minutes).
#
# Run on a machine with one CUDA GPU, from the repository root:
#
#   OUT=results bash benchmarks/device_encode.sh
#
# Needs torch with CUDA and transformers, the project's dependencies (or their wheels in
# `.whl/`, see device_env.sh), a saved bert-base-uncased tokenizer in `.gpu/vocab/` and a
# BEIR corpus as `.gpu/scifact.jsonl` (SciFact's corpus.jsonl); both are git-ignored.
# Writes to $OUT:
#   machine.txt               the GPU, its memory and driver, the core count
#   encode.txt / encode.json  benchmarks/gpu_encode.py at ARTICLES (default 60,000): the
#                             stage eager and compiled, the bare forward eager and compiled,
#                             the token-budget sweep, the rerank head, and sentence search
#                             re-scoring 100 / 400 / 1,600 candidates on the GPU
#   tests.txt                 the `gpu`-marked tests
#   oom.txt                   a small stage under a memory cap: the batch back-off at work
#
# Settings (environment):
#   ARTICLES=N        articles the stage encodes (default 60,000)
#   EXTRA="..."       replaces the token-budget sweep, e.g. "--bare-articles 30000
#                     --skip-rerank" for a larger ARTICLES whose steady rates are the point
#   ONLY_ENCODE=1     skips the tests and the OOM run
#   STAGE=""          runs the stage once, compiled or not as MEDSEARCH_TORCH_COMPILE says
#   COMPILE=""        leaves out the compiled bare forward
#   ENCODE_TIMEOUT=S  the encode step's time limit (default 380 s)
# A compiled stage long enough to amortise compiling (~5 minutes):
#   ARTICLES=400000 STAGE="" EXTRA="--bare-articles 20000 --skip-rerank" ONLY_ENCODE=1 \
#     MEDSEARCH_TORCH_COMPILE=1 ENCODE_TIMEOUT=420 bash benchmarks/device_encode.sh
set -uo pipefail
ARTICLES=${ARTICLES:-60000}
. benchmarks/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
echo "cores: $(nproc)" | tee -a "$OUT/machine.txt"
DATA=(--tokenizer .gpu/vocab --corpus .gpu/scifact.jsonl)
# shellcheck disable=SC2086
timeout "${ENCODE_TIMEOUT:-380}" "$PY" benchmarks/gpu_encode.py --articles "$ARTICLES" --skip-st \
  ${COMPILE---compile} ${STAGE---compile-stage} ${EXTRA:---budget-sweep} "${DATA[@]}" \
  --json "$OUT/encode.json" 2>&1 \
  | grep -v "^W[0-9]\|Writing model" | tee "$OUT/encode.txt"
[ "${ONLY_ENCODE:-0}" = 1 ] && exit 0
timeout 90 "$PY" -m pytest -q -p no:cacheprovider -m gpu -o addopts="" \
  tests/test_coarse.py tests/test_encode_pipeline.py tests/test_batching.py 2>&1 \
  | tail -15 | tee "$OUT/tests.txt"
timeout 60 "$PY" benchmarks/gpu_encode.py --articles 3000 --skip-st --skip-rerank \
  --memory-fraction 0.012 "${DATA[@]}" --json "$OUT/oom.json" 2>&1 | tail -12 | tee "$OUT/oom.txt"
