#!/usr/bin/env bash
# Issue 10's 16-core figures, in one call of the lent device machine (~5 minutes):
#
#   run(command="bash benchmarks/device_cores.sh", carry=[".whl"])
#
# `.whl/` (git-ignored) holds the wheels that machine lacks: tantivy, faiss-cpu, orjson,
# zstandard, platformdirs, regex (transformers brings it there), isal (session 27: the
# parsers' inflate; without it they use zlib, ~10 us more an article), for its Python.
# Results land in $OUT: ingest-JOBS.txt (`benchmarks.ingest --jobs 8` over baseline-sized
# files of 30,000 articles, the reference loops over the first two: target >= 10,000
# articles/s) and lexical.txt (an
# 8-shard index searched from 8 threads, the flat sum against dis_max: target top-1000
# p95 <= 150 ms at 10M, <= 300 ms at 40.9M; LEXDOCS documents, 1M built there in 93 s,
# then scale linearly, as 10M -> 20M measured on 2 cores; LEXDOCS=0: ingest only). To try
# it here, smaller:
#
#   PY=.venv/bin/python OUT=/tmp/out ARTICLES=4000 PER_FILE=1000 LEXDOCS=20000 \
#     bash benchmarks/device_cores.sh
#
# Session 23 ran ARTICLES=120000 LEXDOCS=1000000 with 16 files of 7,500 articles (the
# old default): 7,422 articles/s, with parsers then held 8,000 articles ahead of the writer.
# Since session 24 documents reach tantivy split into words by the parsers, which halved
# tantivy's indexing CPU (~183 -> ~88 us an article on 2 cores).
# WRITER_THREADS=N sets tantivy's indexing threads (default 4 on 16 cores).
# REAL=DIR cycles the real PubMed records of DIR instead of synthetic ones (they parse
# ~1.65x slower): carry ../shared/data/pubmed as .gpu/pubmed and pass REAL=.gpu/pubmed.
# The shards are now built one process each (`--processes`), so 10M documents should fit
# a call of their own: LEXDOCS=10000000 LEXTIME=480 ARTICLES=0 (ARTICLES=0: no ingest).
# Session 25 (16 cores): 720K articles in 24 files gave 7,807/s synthetic and 8,521/s
# real as whole-run rates, the start (the writer following the first file's parser)
# weighing on a few rounds; `benchmarks.ingest` now also prints the steady rate (files
# after the first `--jobs`), the figure for a full baseline: use ARTICLES=720000 or more.
# 3M documents in 8 shards: common p95 53.4 ms; SHARDS=N (default 8) and JOBS=N (default
# 8) try other counts. Since those runs, files the parsers finished share a commit and
# documents reach the writer as JSON (writer thread ~-33%): the model in BENCHMARKS.md
# expects a steady ~13K articles/s on real records, ~15K on synthetic ones.
# Session 26: long_queries.txt times queries of 3-200 words on the same shards, every
# word ranked against the WordBudget (on 2 cores at 10M: 1,927 vs 100 ms p50 at 200).
# Session 27: DOWNLOAD=N (files of PER_FILE articles) times `ingest --download`'s
# overlap on these cores (download_ingest.txt: download alone, ingest alone, taking
# turns, overlapped; a local server paced at DLRATE MB/s a connection, 2 connections;
# 2 cores: overlapped within 2-23% of the slower side). The parsers now inflate with
# ISA-L where its wheel is carried (machine.txt says which).
# Session 28 (H200 machine, 16 cores; benchmarks/device_check.sh ran the ingest steps):
# 600K synthetic 14,533/s whole run, 18,746/s steady; 480K real 12,456 / 20,720/s. 8 shards
# of 10M built in 136 s (6M: 84 s): common top-1000 p95 41.8 ms. DOWNLOAD=8 needs
# DLTIME >= 200: at 150 the overlapped run was cut off (its site was then written serially).
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
timeout 120 "$PY" -m benchmarks.lexical_form --index "$LEX" --queries 30 2>&1 \
  | tee -a "$OUT/lexical.txt"
# queries of 3-200 words with every word ranked and with the WordBudget (session 26)
timeout "${LONGTIME:-120}" "$PY" -m benchmarks.long_queries --dir "$LEX" --queries 10 2>&1 \
  | tee "$OUT/long_queries.txt" || true
