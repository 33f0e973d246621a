#!/usr/bin/env bash
# The README's two commands:
#   scripts/quickstart.sh demo   install what is missing, build, run `tenet demo`
#   scripts/quickstart.sh test   install what is missing, build, run the whole test suite,
#                                then build with ASan+UBSan and run it again
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
jobs=$(nproc 2>/dev/null || echo 2)

build() { # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
}

"$here/scripts/install-deps.sh"
case "${1:-}" in
  demo)
    build build
    shift
    exec build/tenet demo "$@"
    ;;
  test)
    build build
    (cd build && ctest -j "$jobs" --output-on-failure)
    echo "== the same suite under AddressSanitizer + UndefinedBehaviorSanitizer =="
    build build-asan -DTENET_SANITIZE=ON
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest -j "$jobs" --output-on-failure)
    ;;
  *)
    echo "usage: $0 demo|test" >&2
    exit 1
    ;;
esac
