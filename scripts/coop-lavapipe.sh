#!/usr/bin/env bash
# Runs the GPU tests against a software adapter WITH cooperative matrices: the lavapipe of Mesa
# 26.2 (Debian sid) offers 8x8x8 f16→f32 ones, which `shaders/gemm_coop.wgsl` runs as `gemm_coop8`
# (Debian 12's Mesa 22.3, CI's main adapter, offers none). Builds a minimal sid root once with
# debootstrap (root only; about a minute and 550 MB, all from Debian's package registry) at
# $FDSR_SID (default /opt/fdsr-sid), then runs test binaries built here inside it (a newer glibc
# runs them unchanged), with this checkout bind-mounted at the same path.
#
#   scripts/coop-lavapipe.sh             the cooperative-matrix, GEMM and training tests, and a
#                                        step with 512-bit vectors (a driver crash) on AVX-512
#   scripts/coop-lavapipe.sh CMD...      any command there, from the checkout (e.g. target/release/fdsr
#                                        bench train --model tiny)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
root="${FDSR_SID:-/opt/fdsr-sid}"
tests=(gpu_coop gpu_gemm gpu_train)

if [ "$(id -u)" -ne 0 ]; then
  echo "coop-lavapipe: needs root (debootstrap, chroot, bind mounts)" >&2
  exit 1
fi
# Building the root needs Debian's registry: where that fails, exit 3 (scripts/test.sh then says
# the check was skipped) rather than 1, which means a test failed.
# (Each step says `|| return 1`: `set -e` does not hold inside the `if` that calls it.)
setup() {
  command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap || return 1
  debootstrap --variant=minbase sid "$root" http://deb.debian.org/debian || return 1
  cp /etc/resolv.conf "$root/etc/" || return 1
  # The mirror's sid Release file may be past its Valid-Until date.
  chroot "$root" apt-get -q -o Acquire::Check-Valid-Until=false update || return 1
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    mesa-vulkan-drivers libvulkan1 || return 1
  chroot "$root" apt-get clean
}
if [ ! -e "$root/usr/share/vulkan/icd.d/lvp_icd.json" ]; then
  if ! setup > "${TMPDIR:-/tmp}/fdsr-sid-setup.log" 2>&1; then
    tail -20 "${TMPDIR:-/tmp}/fdsr-sid-setup.log" >&2
    echo "coop-lavapipe: could not build the sid root at $root (log above)" >&2
    exit 3
  fi
fi

mounts=()
cleanup() { for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[$i]}" || true; done; }
trap cleanup EXIT
bind() {
  mkdir -p "$root$1"
  mount --bind "$1" "$root$1"
  mounts+=("$root$1")
}
bind /proc
bind /sys
bind /dev
mkdir -p "$root/run/fdsr-xdg"
chmod 700 "$root/run/fdsr-xdg"
bind "$repo"
data="${FDSR_DATA:-${XDG_DATA_HOME:-$HOME/.local/share}/fdsr}"
[ -d "$data" ] && bind "$data"
in_sid() {
  chroot "$root" env -i PATH=/usr/bin:/bin HOME="$HOME" FDSR_DATA="$data" XDG_RUNTIME_DIR=/run/fdsr-xdg \
    REQUIRE_GPU=1 REQUIRE_COOP=1 bash -c 'cd "$1" && shift && "$@"' _ "$repo" "$@"
}

if [ "$#" -gt 0 ]; then
  in_sid "$@"
  exit
fi
# The executables of kind $1 ("test", "bin") that cargo's JSON messages on stdin name.
executables() { grep -F "\"kind\":[\"$1\"]" | grep -o '"executable":"[^"]*"' | cut -d'"' -f4; }
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
# The profile and packages of scripts/test.sh's `cargo test --workspace`, whose build this reuses.
mapfile -t bins < <(cargo test --workspace "${args[@]}" --no-run --message-format=json 2>/dev/null | executables test)
[ "${#bins[@]}" -eq "${#tests[@]}" ] || { echo "coop-lavapipe: built ${#bins[@]} of ${#tests[@]} test binaries" >&2; exit 1; }
log="$root/run/fdsr-tests.log"
for b in "${bins[@]}"; do
  rc=0
  in_sid "$b" --nocapture > "$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$log"
    echo "coop-lavapipe: $(basename "$b") failed" >&2
    exit 1
  fi
  grep -E "^test |cooperative|^test result" "$log"
done
# A driver that crashes compiling the tensor-core kernels must cost `--compute auto` the tensor
# cores, not the run (src/bin/fdsr/coop_probe.rs). Mesa 26.2's lavapipe crashes so with 512-bit
# vectors (subgroups of 16): where the CPU has AVX-512, a benchmark step runs there; it must end
# well either way (fp32 after a crashed probe, or the self-check passed).
if grep -qw avx512f /proc/cpuinfo; then
  fdsr=$(cargo build --bin fdsr --message-format=json 2>/dev/null | executables bin)
  if ! in_sid env LP_NATIVE_VECTOR_WIDTH=512 "$fdsr" bench train --model tiny --batch 8 --steps 1 > "$log" 2>&1; then
    cat "$log"
    echo "coop-lavapipe: fdsr did not survive the 512-bit driver" >&2
    exit 1
  fi
  grep -E "^(adapter|compute):" "$log"
else
  echo "512-bit driver check SKIPPED: this CPU has no AVX-512"
fi
