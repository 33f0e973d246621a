#!/usr/bin/env bash
# tests/cli/overflow.sh — figures that do not fit are errors, never capped numbers with
# exit 0: a time past 2^62 ps (53.4 days: a size too large, a link too slow), a lower
# bound past it, a size the files do not move, a bandwidth below the floor of 0.001 GB/s.
# Each is refused with exit 1 and one line naming the figure; nothing is written.
# Usage: bash overflow.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" overflow

# refused SUBCMD NEEDLE CMD...: exit 1, one line "tenet SUBCMD...: " containing NEEDLE.
refused() {
  SUBCMD=$1
  local needle=$2
  shift 2
  expect_fail 1 "'$*'" "$@"
  desc="'$*'"
  expect_msg "$needle"
}

PAST="passes 2^62 ps (53.4 days), the longest time tenet computes with"
# 2^62 bytes: no All-Gather on 8 NPUs at 50 GB/s takes less than 3.8e7 s (the bound, 3.8e19
# ps); this once printed 9223372.037 s, the cap of a 63-bit time, and time/bound 0.50.
refused compare "$PAST" "$TENET" compare -t ring-8 -c allgather --sizes 4611686018427387904
refused compare "allgather lower bound for 4611686018427387904 bytes" \
  "$TENET" compare -t ring-8 -c allgather --sizes 4611686018427387904
refused synth "the allgather lower bound for 4611686018427387904 bytes (3.76e+07 s) $PAST" \
  "$TENET" synth -t ring-8 -c allgather -s 4611686018427387904 -a ring -o x/ag
refused synth "the allreduce lower bound for 18446744073709551615 bytes" \
  "$TENET" synth -t ring-8 -c allreduce -s 18446744073709551615 -o x/ar

# A bandwidth below the floor is refused at load, in every form of fabric: it once gave a
# capped time and time/bound 1.000.
cat >slow.json <<'J'
{"name": "slow", "npus": 4, "switches": 0, "links": [
 {"src": 0, "dst": 1, "bandwidth": 1e-9, "latency": 500},
 {"src": 1, "dst": 2, "bandwidth": 50, "latency": 500},
 {"src": 2, "dst": 3, "bandwidth": 50, "latency": 500},
 {"src": 3, "dst": 0, "bandwidth": 50, "latency": 500}]}
J
FLOOR="is below the floor of 0.001 GB/s: 1e-09"
refused "topo info" "slow.json: links[0].bandwidth $FLOOR" "$TENET" topo info slow.json
refused compare "links[0].bandwidth $FLOOR" "$TENET" compare -t slow.json -c allgather --sizes 1GiB
refused "topo gen" "--bandwidth $FLOOR" "$TENET" topo gen ring 8 --bandwidth 1e-9 -o x.json
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 1e-9 ]\nlatency: [ 500 ]\n' >slow.yml
refused "topo info" "bandwidth[0] $FLOOR" "$TENET" topo info slow.yml
printf '{"name": "g", "kind": "ring", "dims": [4], "bandwidth": 0.0001, "latency": 5}' >g.json
refused "topo info" "is below the floor of 0.001 GB/s: 0.0001" "$TENET" topo info g.json

# At the floor a link is legal: 1 GiB takes 750 s and reads right. 32 TiB fits the bound
# (the other links carry it) but not the Ring, whose 8 TiB messages cross the slow link:
# the engine says which message.
sed 's/1e-9/0.001/' slow.json >floor.json
SUBCMD=synth
run "$TENET" synth -t floor.json -c allgather -s 1GiB -a ring --chunks 1 -o f/ag --json
check "a link at the floor works: $(cat err.txt)" test "$rc" -eq 0
desc="floor time"
python3 - out.txt <<'PY' && ok || bad "a ring over a 0.001 GB/s link: time and bound"
import json, sys
j = json.load(open(sys.argv[1]))
# 3 blocks of 256 MiB cross the slow link one after another: 3 * 2^28 / (0.001 * 2^30) s.
assert abs(j["time_ns"] / 1e9 - 750.0) < 1.0, j["time_ns"]
assert j["ratio_to_bound"] >= 1.0, j
PY
refused compare "sending 8796093022208 bytes over link 0 (0 -> 1, 0.001 GB/s) $PAST" \
  "$TENET" compare -t floor.json -c allgather --sizes 32TiB --algos ring

# A size the set's files do not move: no bandwidth of no meaning (3.3e16 GB/s once).
run "$TENET" synth -t ring-4 -c allgather -s 1MiB -a ring -o r4/ag
check "synth ring-4" test "$rc" -eq 0
refused sim "--size 18446744073709551615B disagrees with the set r4/ag, whose files say 1MiB" \
  "$TENET" sim -t ring-4 r4/ag -s 18446744073709551615
refused sim "disagrees" "$TENET" sim -t ring-4 r4/ag -c allgather -s 2MiB
SUBCMD=sim
run "$TENET" sim -t ring-4 r4/ag -s 1MiB
check "sim with the set's own size: $(cat err.txt)" test "$rc" -eq 0

testlib_done
