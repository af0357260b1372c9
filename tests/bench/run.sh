#!/usr/bin/env bash
# Runs the heterod vs ONNX Runtime benchmark on the real models.
#   tests/bench/run.sh [BUILD_DIR] [bench_models.js options...]
#   tests/bench/run.sh [BUILD_DIR] gpu [bench_models.js options...]
#       the same with OPENCL and HETERO:OPENCL,CPU next to CPU
#   tests/bench/run.sh [BUILD_DIR] gpu-kernels [bench_gpu_conv options...]
#       the GPU kernels' GFLOP/s next to clpeak's peak (bench_gpu_conv.cpp)
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
if [[ ${1:-} == gpu-kernels ]]; then
  shift
  if [[ ! -x $build/tests/opencl/bench_gpu_conv ]]; then
    echo "bench: no $build/tests/opencl/bench_gpu_conv; build first (ninja -C $build)" >&2
    exit 2
  fi
  exec "$build/tests/opencl/bench_gpu_conv" "$@"
fi
gpu=()
if [[ ${1:-} == gpu ]]; then
  shift
  gpu=(--device CPU --device OPENCL --device HETERO:OPENCL,CPU)
fi
export HETERO_BIN=${HETERO_BIN:-$build/tools/hetero}
if [[ ! -x $HETERO_BIN ]]; then
  echo "bench: no hetero CLI at $HETERO_BIN; build first (ninja -C $build) or set HETERO_BIN" >&2
  exit 2
fi
quantizer=$build/tests/models/quantize_model
int8=()
if [[ -x $quantizer ]]; then int8=(--quantizer "$quantizer" --int8-dir "$build/tests/models/int8"); fi
exec node "$here/bench_models.js" "${int8[@]}" "${gpu[@]}" "$@"
