#!/usr/bin/env bash
# Issue 10's 16-core figures, in one call of the lent device machine (~8 minutes):
#
#   run(command="bash benchmarks/device_cores.sh", carry=[".whl"])
#
# `.whl/` (git-ignored) holds the wheels that machine lacks: tantivy, faiss-cpu, orjson,
# zstandard, platformdirs, built for its Python. Results land in $OUT: ingest.txt
# (`benchmarks.ingest --jobs 8`: target >= 10,000 articles/s) and lexical.txt (an
# 8-shard index searched from 8 threads, the flat sum against dis_max: target top-1000
# p95 <= 150 ms at 10M, <= 300 ms at 40.9M; LEXDOCS documents, then scale linearly, as
# 10M -> 20M measured on 2 cores). Sizes can be made smaller to try the script here:
#
#   PY=.venv/bin/python OUT=/tmp/out ARTICLES=2000 LEXDOCS=20000 bash benchmarks/device_cores.sh
set -euo pipefail
PY=${PY:-python3}
OUT=${OUT:-/tmp/out}
ARTICLES=${ARTICLES:-200000}
LEXDOCS=${LEXDOCS:-4000000}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c "import tantivy, faiss, orjson, zstandard, platformdirs" 2> /dev/null; then
  "$PY" -m pip install --quiet --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
{
  echo "cores: $(nproc)"
  "$PY" -c "import lxml, tantivy, faiss, zstandard, orjson, numpy; print('imports ok')"
} | tee "$OUT/machine.txt"
timeout 300 "$PY" -m benchmarks.ingest --articles "$ARTICLES" --jobs 8 --files 16 --repeat 1 \
  2>&1 | tee "$OUT/ingest.txt"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LEX=$WORK/lexical
timeout 240 "$PY" -m benchmarks.lexical_shards --docs "$LEXDOCS" --shards 8 --dir "$LEX" \
  --queries 30 2>&1 | grep -v "  indexed" | tee "$OUT/lexical.txt"
timeout 120 "$PY" -m benchmarks.lexical_form --index "$LEX" --queries 30 2>&1 \
  | tee -a "$OUT/lexical.txt"
