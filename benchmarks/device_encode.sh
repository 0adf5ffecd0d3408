#!/usr/bin/env bash
# Issue 9's GPU figures in one call of the lent device machine (~7 minutes):
#
#   run(command="bash benchmarks/device_encode.sh", carry=[".whl", ".gpu"], timeout_s=560)
#
# `.whl/` (git-ignored) holds the wheels that machine lacks (tantivy, faiss-cpu, orjson,
# zstandard, platformdirs, regex: transformers brings it there; built for its Python);
# `.gpu/` (git-ignored) a saved bert-base-uncased tokenizer (`vocab/`) and a BEIR corpus
# (`scifact.jsonl`, copied from ../shared for the call and deleted after it). Results land
# in $OUT:
#   encode.txt / encode.json  benchmarks/gpu_encode.py at ARTICLES (default 60,000): the
#                             stage eager and compiled, the bare forward eager and compiled,
#                             the token-budget sweep, the rerank head, and (g) sentence
#                             search re-scoring 100 / 400 / 1,600 candidates on the GPU
#   tests.txt                 the `gpu`-marked tests
#   oom.txt                   a small stage under a memory cap: the back-off at work
#   writer.txt                benchmarks/sentence_writer.py: the sentence writer's host work
set -uo pipefail
ARTICLES=${ARTICLES:-60000}
. benchmarks/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
echo "cores: $(nproc)" | tee -a "$OUT/machine.txt"
DATA=(--tokenizer .gpu/vocab --corpus .gpu/scifact.jsonl)
# The sentence writer's own host work, young vs PubMed-sized, on this machine's cores and
# disk (~1 minute; SKIP_WRITER=1 leaves it out): BENCHMARKS.md measured it on 2 cores.
if [ "${SKIP_WRITER:-0}" != 1 ]; then
  timeout 150 "$PY" -m benchmarks.sentence_writer 2>&1 | tee "$OUT/writer.txt"
fi
# EXTRA replaces the sweep, e.g. EXTRA="--bare-articles 30000 --skip-rerank" for a larger
# ARTICLES whose steady rates are the point; ONLY_ENCODE=1 skips the tests and the OOM run;
# STAGE="" runs the stage once (as the environment says). Session 20's runs (~5 min each):
#   ARTICLES=120000 EXTRA="--bare-articles 30000 --skip-rerank" ONLY_ENCODE=1
# and one compiled stage long enough to amortise compiling (~5 min, not yet run):
#   ARTICLES=400000 STAGE="" EXTRA="--bare-articles 20000 --skip-rerank" ONLY_ENCODE=1 \
#     MEDSEARCH_TORCH_COMPILE=1 ENCODE_TIMEOUT=420
# Session 23's A/B of the placement stream (the stage with list placement on its own CUDA
# stream, then on the encoders' stream as before; no compiling, ~3 minutes):
#   ARTICLES=120000 STAGE="" COMPILE="" SKIP_WRITER=1 ONLY_ENCODE=1 \
#     EXTRA="--bare-articles 30000 --skip-rerank --shared-stream-stage"
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
