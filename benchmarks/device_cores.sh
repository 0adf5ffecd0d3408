#!/usr/bin/env bash
# The many-core figures: ingest and lexical search on a 16-core machine (~5 minutes).
#
# Run on a machine with many cores (a GPU is not needed), from the repository root:
#
#   OUT=results bash benchmarks/device_cores.sh
#
# Needs the project's dependencies (or their wheels in `.whl/`, see device_env.sh); isal
# lets the parsers inflate with ISA-L (without it they use zlib, ~10 us more an article;
# machine.txt says which ran). Writes to $OUT:
#   machine.txt         cores, imports, inflate
#   ingest-JOBS.txt     `benchmarks.ingest --jobs JOBS` over baseline-sized files of
#                       PER_FILE articles, the reference loops over the first two; its
#                       steady rate (files after the first JOBS) is the figure for a full
#                       baseline (target >= 10,000 articles/s; use ARTICLES >= 720000)
#   download_ingest.txt with DOWNLOAD=N: `ingest --download` over N files from a local
#                       server paced at DLRATE MB/s a connection, 2 connections: download
#                       alone, ingest alone, taking turns, overlapped (N=8 needs DLTIME >= 200)
#   lexical.txt         LEXDOCS documents in SHARDS shards (default 8), each built by its own
#                       process and searched from one thread each (target top-1000 p95
#                       <= 150 ms at 10M, <= 300 ms at 40.9M)
#   long_queries.txt    queries of 3-200 words on the same shards, every word ranked
#                       against the WordBudget
#
# Settings (environment): ARTICLES (default 480,000; 0: no ingest), PER_FILE (30,000),
# JOBS (parser processes, default 8; "8 12" runs once per count), WRITER_THREADS
# (tantivy's indexing threads), REAL=DIR (cycle the real PubMed records of DIR instead of
# synthetic ones; they parse ~1.65x slower), LEXDOCS (default 1,000,000; 0: ingest only;
# 10M fits its own run: LEXDOCS=10000000 LEXTIME=480 ARTICLES=0), SHARDS, INGESTTIME,
# LEXTIME, LONGTIME, DLTIME (time limits in seconds).
#
# A small trial on any machine:
#
#   PY=.venv/bin/python OUT=/tmp/out ARTICLES=4000 PER_FILE=1000 LEXDOCS=20000 \
#     bash benchmarks/device_cores.sh
set -euo pipefail
ARTICLES=${ARTICLES:-480000}
PER_FILE=${PER_FILE:-30000}
LEXDOCS=${LEXDOCS:-1000000}
. benchmarks/device_env.sh
{
  echo "cores: $(nproc)"
  "$PY" -c "import lxml, tantivy, faiss, zstandard, orjson, numpy; print('imports ok')"
  "$PY" -c "import isal" 2> /dev/null && echo "inflate: isal" || echo "inflate: zlib"
} | tee "$OUT/machine.txt"
# JOBS="8 12" runs the ingest once per parser count (ingest-8.txt, ingest-12.txt)
for jobs in ${JOBS:-8}; do
  [ "$ARTICLES" = 0 ] || timeout "${INGESTTIME:-300}" "$PY" -m benchmarks.ingest \
    --articles "$ARTICLES" --jobs "$jobs" --files $(((ARTICLES + PER_FILE - 1) / PER_FILE)) \
    --reference-files 2 --repeat 1 ${REAL:+--real "$REAL"} \
    ${WRITER_THREADS:+--writer-threads "$WRITER_THREADS"} 2>&1 | tee "$OUT/ingest-$jobs.txt"
done
if [ "${DOWNLOAD:-0}" != 0 ]; then
  first_jobs=${JOBS:-8}
  timeout "${DLTIME:-400}" "$PY" -m benchmarks.download_ingest --files "$DOWNLOAD" \
    --articles "$PER_FILE" --rate "${DLRATE:-12.5}" --connections 2 --jobs "${first_jobs%% *}" \
    ${REAL:+--real "$REAL"} 2>&1 | tee "$OUT/download_ingest.txt" || true
fi
[ "$LEXDOCS" = 0 ] && exit 0 # LEXDOCS=0: the ingest alone
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LEX=$WORK/lexical
timeout "${LEXTIME:-240}" "$PY" -m benchmarks.lexical_shards --docs "$LEXDOCS" --shards "${SHARDS:-8}" \
  --dir "$LEX" --queries 30 --processes 2>&1 | grep -v "  indexed" | tee "$OUT/lexical.txt"
# queries of 3-200 words with every word ranked and with the WordBudget
timeout "${LONGTIME:-120}" "$PY" -m benchmarks.long_queries --dir "$LEX" --queries 10 2>&1 \
  | tee "$OUT/long_queries.txt" || true
