# Sourced by the device_*.sh scripts: the Python, the output folder and the packages a lent
# machine lacks (its image has torch and transformers, not our search stack), installed
# from the wheels carried in `.whl/` where an import fails. Sets PY and OUT.
PY=${PY:-python3}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c "import tantivy, faiss, orjson, zstandard, platformdirs, regex, isal" 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
