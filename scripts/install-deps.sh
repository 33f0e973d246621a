#!/usr/bin/env bash
# Installs the Debian 12 packages tenet builds and tests with, only those missing.
# Run as root (or with sudo available). Idempotent; needs no network but Debian's mirror.
set -euo pipefail

packages=(
  build-essential cmake pkg-config      # toolchain
  libcjson-dev libyaml-dev libigraph-dev # topo/: topology JSON, ASTRA-sim YAML, analysis
  libglpk-dev                            # milp/: the MILP solver
  libprotobuf-c-dev protobuf-c-compiler  # emit/: Chakra ET (protoc-c generates the C code)
  libxml2-dev zlib1g-dev                 # emit/: MSCCL-IR XML, gzip'd .et input
  libplplot-dev plplot-driver-cairo      # cli/: plots (PNG/SVG through cairo)
  libgraphviz-dev                        # cli/: topology drawings
  libcmocka-dev                          # tests
  # the static archives the tenet program links (CMakeLists.txt, TENET_STATIC_DEPS); the
  # -dev packages above pull in most, these are the ones they may not
  libarpack2-dev libplfit-dev liblapack-dev libblas-dev libgmp-dev libltdl-dev
  libsuitesparse-dev libicu-dev liblzma-dev libgfortran-12-dev
  protobuf-compiler python3-protobuf     # tests: decode our files with Chakra's Python schema
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
