#!/usr/bin/env bash
# `meson install` into a scratch root, then `systemd-analyze verify` on the
# installed heterod.service and heterod.socket: it reads them as systemd
# would, checks that the commands they run exist, and must say nothing at all.
# The installed default config must pass `heterod --check` too (its files
# included: the demo model as installed).
#   verify_units.sh BUILD_DIR HETEROD UNIT_DIR CONFIG MODEL_DIR SYSUSERS_DIR
set -euo pipefail
build=$1 heterod=$2 unit_dir=$3 config=$4 model_dir=$5 sysusers_dir=$6
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not found: skipped"; exit 77; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
DESTDIR=$root meson install -C "$build" --no-rebuild --quiet >/dev/null

# systemd-analyze resolves the units' dependencies (sysinit.target, ...)
# inside --root: give it the host's own units there.
mkdir -p "$root/usr/lib/systemd"
cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"

units=$root$unit_dir
if ! out=$(systemd-analyze verify --root="$root" "$units/heterod.service" "$units/heterod.socket" 2>&1) || [[ -n $out ]]; then
  echo "systemd-analyze verify complained:"
  echo "$out"
  exit 1
fi
echo "systemd-analyze verify: heterod.service and heterod.socket are clean"
# --check opens the files the config names: the installed config's model
# paths are absolute, so they point under the scratch root in its copy.
sed "s|$model_dir/|$root$model_dir/|g" "$root$config" >"$root$config.check.yaml"
"$heterod" --check --config "$root$config.check.yaml"
test -f "$root$model_dir/demo.onnx"
test -f "$root$sysusers_dir/heterod.conf"
