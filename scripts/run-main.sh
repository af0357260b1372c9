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

# The daemon: serve the demo model on a socket (conf/heterod.yaml), then use
# it from a client through that socket, and stop it as systemd would.
./build/daemon/heterod --config conf/heterod.yaml &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [[ -S build/heterod.sock ]] && ./build/tools/hetero --connect build/heterod.sock models 2>/dev/null && break
  kill -0 $daemon || exit 1
  sleep 0.1
done
./build/tools/hetero --connect build/heterod.sock run demo --output-dir build/demo-output-daemon
./build/tools/hetero --connect build/heterod.sock stats
kill -TERM $daemon
wait $daemon
trap - EXIT
