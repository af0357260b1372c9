#!/usr/bin/env bash
# Sets up, builds and runs heterod's main job: list the devices, then run the
# bundled demo model (which the build generates) on the CPU, whole and split
# across two devices by HETERO.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
[[ -d build ]] || meson setup build
ninja -C build

./build/tools/hetero devices
./build/tools/hetero run build/tools/demo.onnx --device CPU --shape image=1x3x32x32 --output-dir build/demo-output
# The same model split by HETERO: the CPU listed as two devices, CPU.1 kept
# to convolutions, the rest on CPU.
./build/tools/hetero run build/tools/demo.onnx --device HETERO:CPU.1,CPU --config CPU.device_count=2 \
  --config CPU.1:ops=Conv --shape image=1x3x32x32
