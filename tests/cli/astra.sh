#!/usr/bin/env bash
# tests/cli/astra.sh — `tenet astra`: the directory it writes for ASTRA-sim (set, workload,
# system JSON, remote-memory JSON, network YAML, run.sh), decoded with protobuf's own Python
# runtime and checked key by key; run.sh against a stand-in simulator; refusals.
# Usage: bash astra.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" astra
PY=/usr/bin/python3 # Debian's, which has python3-protobuf
D="$SCRATCH/r8"

run "$TENET" astra -t ring-8 -c allgather -s 1MiB -a greedy -o "$D"
desc="astra ring-8"; expect_rc 0
for f in network.yml system.json remote_memory.json run.sh set/greedy.7.et workload/allgather.7.et; do
  [ -e "$D/$f" ] && ok || bad "missing $f"
done
[ -x "$D/run.sh" ] && ok || bad "run.sh not executable"
[ ! -e "$D/set/greedy.8.et" ] && ok || bad "a ninth rank"
ls "$SCRATCH" | grep -q tmp && bad "a temporary is left: $(ls "$SCRATCH")" || ok
grep -q "predicts 9044.921 ns" out.txt && ok || bad "prediction: $(cat out.txt)"

# network.yml, key by key.
printf 'topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]  # GB/s\nlatency: [ 500 ]  # ns\n' >want.yml
tail -n +2 "$D/network.yml" | cmp -s - want.yml && ok || bad "network.yml: $(cat "$D/network.yml")"

# system.json: the custom key names the set's absolute prefix; one dataset split.
$PY - "$D" <<'PYEOF' && ok || bad "system.json"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "system.json")))
assert s["all-gather-implementation-custom"] == [os.path.join(d, "set", "greedy")], s
assert s["preferred-dataset-splits"] == 1, s
assert os.path.isabs(s["all-gather-implementation-custom"][0])
assert json.load(open(os.path.join(d, "remote_memory.json"))) == {"memory-type": "NO_MEMORY_EXPANSION"}
PYEOF

# The workload and the set, through protobuf's Python runtime and Chakra's schema.
if $PY -c 'import google.protobuf' 2>/dev/null && command -v protoc >/dev/null &&
  mkdir -p gen && protoc --python_out=gen --proto_path="$SRC/emit/chakra" "$SRC/emit/chakra/et_def.proto"; then
  $PY - "$SRC/tests/cli/lib" gen "$D/workload/allgather" 8 <<'PYEOF' && ok || bad "workload decode"
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import et_def_pb2 as pb
from chakra_frames import read_records
for r in range(int(sys.argv[4])):
    recs = list(read_records("%s.%d.et" % (sys.argv[3], r)))
    md = pb.GlobalMetadata(); md.ParseFromString(recs[0])
    assert md.version, "no version"
    assert len(recs) == 2, "rank %d: %d records" % (r, len(recs))
    n = pb.Node(); n.ParseFromString(recs[1])
    assert n.type == pb.COMM_COLL_NODE, n.type
    at = {a.name: a for a in n.attr}
    assert at["comm_type"].WhichOneof("value") == "int64_val" and at["comm_type"].int64_val == pb.ALL_GATHER
    assert at["comm_size"].int64_val == 1 << 20
    assert at["is_cpu_op"].WhichOneof("value") == "bool_val" and not at["is_cpu_op"].bool_val
PYEOF
  $PY "$SRC/tests/cli/chakra_decode.py" gen "$D/set/greedy" >dec.txt && ok || bad "set decode: $(cat dec.txt)"
else
  bad "protobuf checks need $PY with google.protobuf and protoc (scripts/install-deps.sh installs them)"
fi

# run.sh: no simulator -> exit 2 with the reason; a stand-in that prints ASTRA-sim's lines.
( PATH=/usr/bin:/bin ASTRA_SIM= "$D/run.sh" >rs.txt 2>&1 ); rc=$?
[ $rc = 2 ] && grep -q "set ASTRA_SIM" rs.txt && ok || bad "run.sh without ASTRA-sim: rc $rc $(cat rs.txt)"
cat >fake.sh <<'SH'
#!/bin/sh
for a in "$@"; do case "$a" in --workload-configuration=*) w=${a#*=} ;; esac; done
[ -f "$w.0.et" ] || { echo "no workload $w" >&2; exit 3; }
mkdir -p log && echo run >log/log.log # as ASTRA-sim: its log where it runs
echo "sys[0] finished, 9046 cycles"
echo "sys[7] finished, 9050 cycles"
echo "sys[3] finished, 812 cycles"
SH
chmod +x fake.sh
ASTRA_SIM="$SCRATCH/fake.sh" "$D/run.sh" >rs.txt 2>&1 && grep -q "ASTRA-sim: 9050 ns; tenet predicted 9044.921 ns" rs.txt &&
  ok || bad "run.sh with a stand-in: $(cat rs.txt)"
# ...and beside it the time with every delay in whole ns, as the real ASTRA-sim counts
# delays: 9040 ns for this set (measured with astra-sim 518bd51's congestion-aware backend).
grep -q "tenet predicted 9044.921 ns (exact delays); in whole ns, as ASTRA-sim counts delays: 9040.000 ns" rs.txt &&
  ok || bad "run.sh lacks the whole-ns prediction: $(cat rs.txt)"
# run.sh runs the simulator from its own directory, so ASTRA-sim's log/ lands there, not
# wherever the user stands (the stand-in is named relative to that place).
mkdir -p elsewhere && (cd elsewhere && ASTRA_SIM=../fake.sh "$D/run.sh" >/dev/null 2>&1) &&
  [ -f "$D/log/log.log" ] && [ ! -e elsewhere/log ] && ok ||
  bad "run.sh left ASTRA-sim's log outside its directory: $(ls elsewhere "$D")"

# --set: a set made elsewhere; the unaware backend takes a torus.
run "$TENET" astra -t ring-8 -c allgather -s 1MiB --set "$D/set/greedy" -o "$SCRATCH/again"
desc="astra --set"; expect_rc 0
cmp -s "$D/set/greedy.3.et" "$SCRATCH/again/set/greedy.3.et" && ok || bad "--set copy differs"
run "$TENET" astra -t torus-4x4 -c allreduce -s 64KiB -o "$SCRATCH/t" --backend unaware
desc="astra unaware torus"; expect_rc 0
grep -q "topology: \[ Ring, Ring \]" "$SCRATCH/t/network.yml" && ok || bad "torus yaml"

# Refusals: one line, exit 1, nothing written.
refuse() {
  local frag=$1
  shift
  desc="$*"
  expect_fail 1 "$desc" "$@"
  expect_msg "$frag"
}
refuse "1-D fabrics only" "$TENET" astra -t mesh-4x4 -c allgather -s 1MiB -o "$SCRATCH/m"
refuse "is a line" "$TENET" astra -t mesh-4x4 -c allgather -s 1MiB -o "$SCRATCH/m" --backend unaware
refuse "given link by link" "$TENET" astra -t dgx1-8 -c allgather -s 1MiB -o "$SCRATCH/m"
refuse "not empty" "$TENET" astra -t ring-8 -c allgather -s 1MiB -o "$D"
refuse "not allreduce" "$TENET" astra -t ring-8 -c allreduce -s 1MiB --set "$D/set/greedy" -o "$SCRATCH/m"
refuse "expected aware or unaware" "$TENET" astra -t ring-8 -c allgather -s 1MiB -o "$SCRATCH/m" --backend fast
refuse "do not apply" "$TENET" astra -t ring-8 -c allgather -s 1MiB -a ring --set "$D/set/greedy" -o "$SCRATCH/m"
[ ! -e "$SCRATCH/m" ] && ok || bad "a refused run left $SCRATCH/m"
"$TENET" astra --help | grep -q -- "--backend" && ok || bad "--help"

# topo gen --astra-yaml: the same YAML, read back as the same shape.
run "$TENET" topo gen switch 16 --bandwidth 100 --latency 250 --astra-yaml -o sw.yml
desc="topo gen --astra-yaml"; expect_rc 0
grep -q "topology: \[ Switch \]" sw.yml && grep -q "bandwidth: \[ 100 \]" sw.yml && ok || bad "sw.yml: $(cat sw.yml)"
"$TENET" topo info sw.yml | grep -q "switch 16 (100 GB/s, 250 ns)" && ok || bad "sw.yml does not read back"
SUBCMD="topo gen"
expect_fail 1 "mesh as ASTRA-sim YAML" "$TENET" topo gen mesh 4x4 --astra-yaml -o m.yml
expect_msg "is a line"

# What a run killed mid-write leaves (DIR.tmp.<dead pid>) goes on the next run; a run that
# fails before writing creates no folder at all.
mkdir -p stale/r8.tmp.999999/set && touch stale/r8.tmp.999999/set/greedy.0.et
run "$TENET" astra -t ring-8 -c allgather -s 1MiB -o stale/r8
desc="astra after a killed run"; expect_rc 0
[ "$(ls stale)" = "r8" ] && ok || bad "stale folder left: $(ls stale)"
SUBCMD=astra
refuse "smaller than one byte per chunk" "$TENET" astra -t ring-8 -c allgather -s 1 -o "$SCRATCH/new/deep/dir"
[ ! -e "$SCRATCH/new" ] && ok || bad "a failed run created $SCRATCH/new"

testlib_done
