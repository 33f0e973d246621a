#!/usr/bin/env bash
# tests/cli/scale.sh — `tenet topo info` on fabrics of up to 65536 NPUs: the diameter from
# the shape (exact) or from two BFS sweeps (a lower bound, said so), and a latency bound
# that is not 0 where the all-pairs computations are skipped. (A BFS from every NPU took
# 147-394 s on ring-65536 before; each case here takes well under a second.)
# Usage: bash scale.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" topo

# diameter_of TOPO WANT EXACT: the JSON's diameter and diameter_exact.
diameter_of() {
  "$TENET" topo info "$1" --json >d.json 2>err.txt || { bad "topo info $1: $(cat err.txt)"; return; }
  python3 - d.json "$2" "$3" <<'PY' && ok || bad "topo info $1: $(cat d.json)"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["diameter"] == int(sys.argv[2]), o["diameter"]
assert o["diameter_exact"] == (sys.argv[3] == "exact"), o["diameter_exact"]
assert o["latency_bound_ns"] > 0, o["latency_bound_ns"]
PY
}
diameter_of ring-65536 32768 exact
diameter_of mesh-256x256 510 exact
diameter_of torus-32x32x32 48 exact
diameter_of ring-16 8 exact
# The same ring written link by link has no shape: two sweeps, a lower bound, said so.
"$TENET" topo gen ring 20000 --explicit -o r20k.json >/dev/null || bad "topo gen ring 20000"
diameter_of r20k.json 10000 bound
"$TENET" topo info r20k.json | grep -q "diameter     >= 10000 hops over NPU pairs (two BFS sweeps" &&
  ok || bad "summary does not say the diameter is a lower bound"
# Latency: hops from NPU 0 x 500 ns on the big ring (16.38 ms), not 0.
"$TENET" topo info ring-65536 | grep -q "latency         16.38 ms  hops from NPU 0" && ok ||
  bad "ring-65536 latency line: $("$TENET" topo info ring-65536 | grep latency)"

testlib_done
