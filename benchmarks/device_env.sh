# Sourced by the device_*.sh scripts: sets PY (the Python to run, default python3) and
# OUT (where results are written, default /tmp/out), and puts this checkout on PYTHONPATH.
# A GPU machine's image often has torch and transformers but not the search stack; when
# an import of tantivy, faiss, orjson, zstandard, platformdirs, regex or isal fails, the
# wheels in `.whl/` (build them for that machine's Python with `pip wheel`) are installed
# into /tmp/site, so the scripts also run where no package index can be reached.
PY=${PY:-python3}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c "import tantivy, faiss, orjson, zstandard, platformdirs, regex, isal" 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
