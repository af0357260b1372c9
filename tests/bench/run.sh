#!/usr/bin/env bash
# Runs the heterod vs ONNX Runtime benchmark on the real models.
#   tests/bench/run.sh [BUILD_DIR] [bench_models.js options...]
# BUILD_DIR (default: build) holds the hetero CLI at tools/hetero and the
# quantizer at tests/models/quantize_model, with which the int8 versions of
# the models are made (into BUILD_DIR/tests/models/int8) and measured beside
# the float32 ones; the models and ONNX Runtime come from
# ${HETERO_TEST_CACHE:-~/.cache/heterod-test} (scripts/setup.sh --test-data
# fills it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build
if [[ $# -gt 0 && $1 != --* ]]; then build=$1; shift; fi
[[ $build = /* ]] || build=$root/$build
export HETERO_BIN=${HETERO_BIN:-$build/tools/hetero}
if [[ ! -x $HETERO_BIN ]]; then
  echo "bench: no hetero CLI at $HETERO_BIN; build first (ninja -C $build) or set HETERO_BIN" >&2
  exit 2
fi
quantizer=$build/tests/models/quantize_model
int8=()
if [[ -x $quantizer ]]; then int8=(--quantizer "$quantizer" --int8-dir "$build/tests/models/int8"); fi
exec node "$here/bench_models.js" "${int8[@]}" "$@"
