#!/usr/bin/env bash
# The Debian packages end to end, as an edge box gets them: built from a
# clean copy of the source tree with dpkg-buildpackage, checked by lintian,
# installed with apt-get on this machine, the installed daemon run as the
# heterod user from /etc/heterod/heterod.yaml and queried with the installed
# hetero CLI and Python package, then purged, leaving nothing running,
# listening or installed.
#
#   debian_packages.sh SOURCE_DIR WORK_DIR
#
# Needs root (it installs packages and the daemon's system user); skips (77)
# without it or without apt-get and dpkg-buildpackage, and when heterod's
# packages are already installed here (it would replace and purge them).
# Whatever happens, it purges what it installed and removes the heterod user
# if it created it.
set -euo pipefail

src=$(realpath "$1")
work=$2
here=$(dirname "$(realpath "$0")")
packages=(heterod libhetero0 libhetero-dev heterod-driver-opencl heterod-driver-level-zero python3-heterod)
socket=/run/heterod/heterod.sock

skip() { echo "SKIP: $*"; exit 77; }
die() { echo "FAIL: $*"; exit 1; }
failures=0
check() {  # what the user would notice, then the command that shows it
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}

# dpkg-buildpackage sets it: this test must not run inside the build it makes.
[[ -z ${DEB_RULES_REQUIRES_ROOT+set} ]] || skip "inside a Debian package build"
[[ $(id -u) -eq 0 ]] || skip "needs root: it installs the packages and creates the heterod system user"
for tool in apt-get dpkg-buildpackage lintian setpriv flock; do
  command -v "$tool" >/dev/null || skip "$tool not found (scripts/setup.sh installs what the packages need)"
done

# One run at a time on a machine: two would install and purge the same packages.
exec 9>/run/lock/heterod-packages-test.lock
flock -w 1800 9 || die "another run of this test holds /run/lock/heterod-packages-test.lock"

present=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${packages[@]}" 2>/dev/null |
          awk '$1 != "un" && $1 != "pn" {print $2}' || true)
if [[ -n $present || -e /usr/sbin/heterod ]]; then
  skip "heterod is already installed here (${present:-/usr/sbin/heterod}): this test would replace and purge it"
fi

# The build and the daemon run without the test harness's environment
# (sanitizer options, malloc perturbation) and with Debian's own Python:
# pybuild needs its modules, which a python3 earlier on PATH may lack.
unset MALLOC_PERTURB_ ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS HETERO_LIB PYTHONPATH HETEROD_SOCKET
export PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive
apt=(apt-get -y -q -o DPkg::Lock::Timeout=600)
python_query() {  # in-process MODEL | daemon SOCKET: writes run/MODE.npy
  (cd "$work/run" && /usr/bin/python3 "$here/query_installed.py" "$1" "$2" image.npy "$1.npy")
}

user_existed=$(getent passwd heterod >/dev/null && echo yes || echo no)
installed=no
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid"; sleep 2; kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  if [[ $installed == yes ]]; then
    "${apt[@]}" purge "${packages[@]}" >/dev/null 2>&1 || echo "cleanup: apt-get purge failed"
  fi
  if [[ $user_existed == no ]] && getent passwd heterod >/dev/null; then
    userdel heterod || echo "cleanup: userdel heterod failed"
  fi
  rm -rf "$work/src"
}
trap cleanup EXIT

# --- Build, from a copy holding only the tree's sources --------------------
rm -rf "$work"
mkdir -p "$work/src/heterod" "$work/run"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
  # Tracked files and untracked ones git does not ignore (the working tree as
  # it will be committed); never build directories.
  git -C "$src" ls-files -z --cached --others --exclude-standard |
    tar -C "$src" --null --ignore-failed-read -T - -cf - | tar -C "$work/src/heterod" -xf -
else
  tar -C "$src" --exclude='./build*' --exclude='./obj-*' --exclude=./.git -cf - . | tar -C "$work/src/heterod" -xf -
fi

# The packages as a box gets them, but for the optimiser: noopt (-O0) builds
# them in about half the time on two cores (this build was the longest step
# of the whole test command), and what this test checks is the packaging
# (files, users, units, lintian, install and purge), which the optimiser does
# not change; the optimised code is what every other suite runs. nocheck: the
# project's suite runs on its own; noddebs: no debugging-symbol packages.
echo "building the packages (dpkg-buildpackage -b, log in $work/build.log)"
start=$SECONDS
if ! (cd "$work/src/heterod" &&
      DEB_BUILD_OPTIONS="nocheck noddebs noopt parallel=2" DEB_BUILD_PROFILES=nocheck \
        dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log"
  die "dpkg-buildpackage failed (missing build dependencies belong in scripts/setup.sh)"
fi
echo "built in $((SECONDS - start)) s"
mkdir -p "$work/debs"
mv "$work/src"/*.deb "$work/src"/*.changes "$work/src"/*.buildinfo "$work/debs/"
cd "$work/debs"

echo "packages (.deb size, installed size):"
for deb in *.deb; do
  printf '  %-44s %6d KiB  %6d KiB installed\n' "$deb" $(( $(stat -c %s "$deb") / 1024 )) \
    "$(dpkg-deb -f "$deb" Installed-Size)"
done
for p in "${packages[@]}"; do
  check "package $p built" test -n "$(compgen -G "${p}_*.deb")"
done

# --- lintian: errors fail, warnings are listed -----------------------------
lintian_out=$(lintian --fail-on error ./*.changes 2>&1) && lintian_rc=0 || lintian_rc=$?
echo "lintian:"; echo "$lintian_out" | grep -v 'root privileges' | sed 's/^/  /'
check "lintian reports no errors" [ "$lintian_rc" -eq 0 ]

# --- libhetero0 alone runs models in process on the CPU ---------------------
/usr/bin/python3 -c "import numpy as np; np.save('$work/run/image.npy', \
  np.random.default_rng(7).random((1, 3, 32, 32), dtype=np.float32))"
demo_model=$(ls "$work"/src/heterod/obj-*/tools/demo.onnx)
installed=yes
"${apt[@]}" install "./libhetero0_"*.deb "./python3-heterod_"*.deb >"$work/install.log" 2>&1 ||
  { tail -20 "$work/install.log"; die "apt-get install libhetero0 python3-heterod failed"; }
check "libhetero0 + python3-heterod alone: the demo model runs in process on the CPU" \
  python_query in-process "$demo_model"

# --- All of them, the daemon as its unit runs it --------------------------
"${apt[@]}" install ./*.deb >"$work/install.log" 2>&1 ||
  { tail -20 "$work/install.log"; die "apt-get install ./*.deb failed"; }
echo "ok: apt-get install ./*.deb"
getent passwd heterod >/dev/null || die "no heterod user after installing heterod (systemd-sysusers in its postinst)"
echo "ok: the postinst created the heterod user"
check "heterod --check accepts the installed /etc/heterod/heterod.yaml" \
  /usr/sbin/heterod --check --config /etc/heterod/heterod.yaml

unit=/lib/systemd/system/heterod.service
if [[ -d /run/systemd/system ]]; then
  # systemd runs here: the postinst enabled and started heterod.socket.
  systemctl start heterod.service || die "systemctl start heterod.service failed"
  daemon_pid=$(systemctl show -p MainPID --value heterod.service)
else
  # No systemd: what the unit does, by hand. Its directories, owned by the
  # daemon's user, the environment systemd gives, and its ExecStart run as
  # User=heterod, Group=heterod.
  for dir in /run/heterod /var/lib/heterod /var/cache/heterod; do install -d -o heterod -g heterod -m 0755 "$dir"; done
  exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
  [[ -n $exec_start ]] || die "$unit has no ExecStart"
  echo "starting, as heterod: $exec_start"
  # shellcheck disable=SC2086 # ExecStart is a command line
  (cd / && exec env RUNTIME_DIRECTORY=/run/heterod STATE_DIRECTORY=/var/lib/heterod \
    CACHE_DIRECTORY=/var/cache/heterod \
    setpriv --reuid=heterod --regid=heterod --init-groups --inh-caps=-all $exec_start) \
    >"$work/daemon.log" 2>&1 9>&- &
  daemon_pid=$!
fi

ready=no
for _ in $(seq 120); do
  if [[ -n $daemon_pid ]] && ! kill -0 "$daemon_pid" 2>/dev/null; then break; fi
  if hetero --connect "$socket" models 2>/dev/null | grep -Eq '^demo +ready'; then ready=yes; break; fi
  sleep 0.5
done
[[ $ready == yes ]] || { cat "$work/daemon.log" 2>/dev/null; die "the installed heterod did not serve the demo model on $socket"; }
echo "ok: the installed heterod serves the demo model of /etc/heterod/heterod.yaml on $socket"
daemon_user=$(ps -o user= -p "$daemon_pid" | tr -d ' ')
check "heterod runs as user heterod (it runs as '$daemon_user')" [ "$daemon_user" = heterod ]
socket_owner=$(stat -c '%U:%G %a' "$socket")
check "its socket is heterod:heterod 0660, as the config says (it is $socket_owner)" \
  [ "$socket_owner" = "heterod:heterod 660" ]

# --- Queried with the installed CLI and the installed Python package --------
check "the installed hetero CLI runs the demo model through heterod" \
  hetero --connect "$socket" run demo --input "image=$work/run/image.npy" --output "probabilities=$work/run/cli.npy"
check "the installed Python package (import heterod) runs the demo model through heterod" \
  python_query daemon "$socket"
check "in process, the CLI and Python through heterod give bit-identical outputs" /usr/bin/python3 -c "
import numpy as np, sys
a, b, c = (np.load('$work/run/' + n) for n in ('in-process.npy', 'cli.npy', 'daemon.npy'))
sys.exit(0 if np.array_equal(a, b) and np.array_equal(a, c) else 1)"

# --- Stopped as the unit stops it, then purged ------------------------------
if [[ -d /run/systemd/system ]]; then
  systemctl stop heterod.service heterod.socket
else
  kill -TERM "$daemon_pid"
  for _ in $(seq 60); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.5; done
  check "SIGTERM: heterod stops cleanly (exit status 0)" wait "$daemon_pid"
fi
"${apt[@]}" purge "${packages[@]}" >"$work/purge.log" 2>&1 || { tail -20 "$work/purge.log"; die "apt-get purge failed"; }
installed=no
echo "ok: apt-get purge ${packages[*]}"

still=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${packages[@]}" 2>/dev/null | awk '$1 != "un" && $1 != "pn"' || true)
check "dpkg knows none of them after purge${still:+ (it still has: $still)}" [ -z "$still" ]
# The installed binary (even deleted) or anything of the heterod user.
running=$(pgrep -u heterod 2>/dev/null || true)
for proc in /proc/[0-9]*; do
  if [[ $(readlink "$proc/exe" 2>/dev/null) == /usr/sbin/heterod* ]]; then running+=" ${proc#/proc/}"; fi
done
running=${running//$'\n'/ }
check "no heterod process left${running:+ (pids $running)}" [ -z "${running// /}" ]
listening=$(grep -F /run/heterod/ /proc/net/unix || true)
if [[ -e $socket ]]; then listening+=" $socket"; fi
check "nothing listening on /run/heterod${listening:+: $listening}" [ -z "$listening" ]
left=$(ls -d /usr/lib/*/heterod /etc/heterod /run/heterod /var/lib/heterod /var/cache/heterod /usr/share/heterod \
          /usr/share/doc/heterod /usr/include/hetero /usr/lib/python3/dist-packages/heterod* \
          /lib/systemd/system/heterod.* /etc/systemd/system/*/heterod.* /usr/lib/sysusers.d/heterod.conf \
          /usr/sbin/heterod /usr/bin/hetero 2>/dev/null || true)
check "no file of heterod's left${left:+: ${left//$'\n'/ }}" [ -z "$left" ]
echo "note: Debian leaves system users in place on purge; the heterod user is" \
     "$([[ $user_existed == no ]] && echo "removed by this test, which created it" || echo "kept (it was here before)")"

((failures == 0)) || die "$failures checks failed"
echo "all checks passed"
