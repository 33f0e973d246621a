#!/usr/bin/env bash
# tests/cli/workload.sh — `tenet workload` and `tenet sim --workload`: example steps, the
# directory ASTRA-sim runs (sets, per-node YAML, system JSON, workload copy, manifest,
# run.sh), a hand-worked step time, the cache, determinism across thread counts, and
# refusals of bad workloads and arguments.
# Usage: bash workload.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" workload
PY=/usr/bin/python3 # Debian's, which has python3-protobuf

run "$TENET" workload --help
desc="workload --help"; expect_rc 0
grep -q "per_node.yaml" out.txt && grep -q "example KIND" out.txt && ok || bad "help"

# An example step: dp on 8 ranks, 4 layers of 1 ms compute and 4 MiB gradients.
run "$TENET" workload example dp -n 8 -s 4MiB --compute-us 1000 -o w/dp
desc="example dp"; expect_rc 0
for r in 0 7; do [ -s "w/dp.$r.et" ] && ok || bad "missing w/dp.$r.et"; done
[ ! -e w/dp.8.et ] && ok || bad "a ninth rank"

# The directory, with Ring sets so the step can be worked by hand.
D="$SCRATCH/out"
run "$TENET" workload -t ring-8 w/dp -o "$D" -a ring --json
desc="workload ring-8 dp"; expect_rc 0
for f in per_node.yaml system.json workload.json network.yml remote_memory.json run.sh \
  workload/dp.0.et workload/dp.7.et; do
  [ -e "$D/$f" ] && ok || bad "missing $f"
done
cmp -s w/dp.3.et "$D/workload/dp.3.et" && ok || bad "the workload copy differs"
ls "$SCRATCH" | grep -q "tmp\." && bad "a temporary is left: $(ls "$SCRATCH")" || ok
$PY - "$D" <<'PYEOF' && ok || bad "directory contents"
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "workload.json")))
s = json.load(open(os.path.join(d, "system.json")))
assert s["per-node-custom-implementation"] == os.path.join(d, "per_node.yaml"), s
assert s["all-reduce-implementation"] == ["ring"], s
# per_node.yaml: node id -> absolute set prefix, one per collective with a set.
yaml = {}
for line in open(os.path.join(d, "per_node.yaml")):
    if line.startswith("#") or not line.strip():
        continue
    k, v = line.split(":", 1)
    yaml[int(k)] = v.strip().strip('"')
colls = {c["node"]: c for c in m["collectives"]}
assert sorted(yaml) == [1, 3, 5, 7, 8], yaml
for node, prefix in yaml.items():
    assert prefix == os.path.join(d, colls[node]["set"]), (node, prefix)
    assert os.path.exists(prefix + ".0.et") and os.path.exists(prefix + ".7.et")
assert {c["type"] for c in m["collectives"]} == {"ALL_REDUCE", "ALL_GATHER"}
# Hand-worked: each All-Reduce (shorter than a layer's 1 ms) starts when its layer's
# backward ends, so the last starts at 4 ms; the All-Gather follows it.
t = {x["collective"]: float(x["time_ns"]) for x in m["sets"]}
assert t["allreduce"] < 1e6, t
want = 4e6 + t["allreduce"] + t["allgather"]
assert abs(float(m["step_ns"]) - want) < 1e-3, (m["step_ns"], want)
assert abs(float(m["exposed_comm_ns"]) - (want - 4e6)) < 1e-3, m["exposed_comm_ns"]
PYEOF

# tenet sim --workload reads the directory back: the same step.
run "$TENET" sim -t ring-8 w/dp --workload "$D" --json
desc="sim --workload"; expect_rc 0
json_ok out.txt && ok || bad "sim --workload JSON"
[ "$(json_get out.txt step_ns)" = "$(json_get "$D/workload.json" step_ns)" ] && ok ||
  bad "step_ns $(json_get out.txt step_ns) vs the manifest's $(json_get "$D/workload.json" step_ns)"
$PY - out.txt <<'PYEOF' && ok || bad "sim --workload keys"
import json, sys
o = json.load(open(sys.argv[1]))
for k in ("step_ns", "exposed_comm_ns", "compute_ns", "ring", "direct", "collectives"):
    assert k in o, k
assert len(o["collectives"]) == 5
# The sets are Ring's (order-proofed: a few ns of gates more than the bare Ring).
assert 0 <= float(o["step_ns"]) - float(o["ring"]["step_ns"]) < 100, o
assert float(o["direct"]["step_ns"]) > 0
for c in o["collectives"]:
    assert abs(float(c["end_ns"]) - float(c["start_ns"]) - float(c["time_ns"])) < 1e-3, c
PYEOF
run "$TENET" sim -t ring-8 w/dp --workload "$D"
desc="sim --workload text"; expect_rc 0
grep -q "exposed comm" out.txt && grep -q "ALL_GATHER" out.txt && ok || bad "text: $(head -3 out.txt)"

# The manifest keeps each set's run alone; sim --workload takes it (a step whose
# collectives overlap, so that some are carried into the network and run alone after all)
# and gives the same step as with the records taken out or naming another set.
run "$TENET" workload example mixed -n 8 --layers 12 -s 1MiB --compute-us 2 -o w/mx
desc="example mixed"; expect_rc 0
run "$TENET" workload -t ring-8 w/mx -o mx
desc="workload mixed"; expect_rc 0
run "$TENET" sim -t ring-8 w/mx --workload mx --json
desc="sim --workload with the records"; expect_rc 0
cp out.txt mx_with.json
cp -r mx mx_without
cp -r mx mx_other
cp -r mx mx_bad
$PY - mx mx_without mx_other mx_bad <<'PYEOF' && ok || bad "alone records"
import json, sys
d, without, other = sys.argv[1:4]
m = json.load(open(d + "/workload.json"))
assert len(m["fabric_digest"]) == 16, m["fabric_digest"]
recs = [s for s in m["sets"] if "alone_ps" in s] # the sets run alone in the step
assert len(recs) >= 3, m["sets"]
for s in recs:
    assert len(s["set_id"]) == 16, s
    v = [int(x) for x in s["alone_ps"].split(" ")]
    assert len(v) == 9 and max(v[1:]) >= v[0] > 0, s
for s in recs:
    del s["alone_ps"]
json.dump(m, open(without + "/workload.json", "w"))
m = json.load(open(d + "/workload.json"))
for s in m["sets"]:
    if "alone_ps" in s:
        s["set_id"] = "%016x" % (int(s["set_id"], 16) ^ 1)
        s["alone_ps"] = " ".join(str(int(x) + 7) for x in s["alone_ps"].split(" "))
json.dump(m, open(other + "/workload.json", "w"))
# Records that are not npus + 1 decimal numbers are passed over.
m = json.load(open(d + "/workload.json"))
bad = ["", "1 2", "x", " 1 2 3 4 5 6 7 8 9", "1  2 3 4 5 6 7 8 9", "1 2 3 4 5 6 7 8 9 ",
       "1 2 3 4 5 6 7 8 99999999999999999999999", "-1 2 3 4 5 6 7 8 9", 5, None]
i = 0
for s in m["sets"]:
    if "alone_ps" in s:
        s["alone_ps"] = bad[i % len(bad)]
        i += 1
json.dump(m, open(sys.argv[4] + "/workload.json", "w"))
PYEOF
for x in mx_without mx_other mx_bad; do
  run "$TENET" sim -t ring-8 w/mx --workload $x --json
  desc="sim --workload $x"; expect_rc 0
  sed "s#\"dir\":\"[^\"]*\"##" out.txt > a.json
  sed "s#\"dir\":\"[^\"]*\"##" mx_with.json > b.json
  cmp -s a.json b.json && ok || bad "$x: another step than with the records"
done
# Records that do name the set are taken as they are; here a collective is met in the
# network, run alone after all and found to differ from its record: an error.
cp -r mx mx_off
$PY - mx_off <<'PYEOF' && ok || bad "records off by 7 ps"
import json, sys
m = json.load(open(sys.argv[1] + "/workload.json"))
for s in m["sets"]:
    if "alone_ps" in s:
        s["alone_ps"] = " ".join(str(int(x) + 7) for x in s["alone_ps"].split(" "))
json.dump(m, open(sys.argv[1] + "/workload.json", "w"))
PYEOF
SUBCMD=sim
expect_fail 1 "sim --workload, records off" "$TENET" sim -t ring-8 w/mx --workload mx_off
expect_msg "other times than the ones given"
SUBCMD=workload

# Again into the same directory: replaced whole, every set from the one it replaces.
cp -r "$D/sets" sets.before
run "$TENET" workload -t ring-8 w/dp -o "$D" -a ring --json
desc="workload again"; expect_rc 0
$PY -c 'import json,sys; m=json.load(open(sys.argv[1])); assert all(s["cached"] for s in m["sets"]), m["sets"]' out.txt &&
  ok || bad "second run synthesized again"
diff -r sets.before "$D/sets" >/dev/null && ok || bad "cached sets differ"

# A cache folder shared across directories; any thread count gives the same files.
run "$TENET" workload -t switch-8 w/dp -o d1 -j 1 --cache cache --json
desc="workload -j 1 --cache"; expect_rc 0
$PY -c 'import json,sys; m=json.load(open(sys.argv[1])); assert not any(s["cached"] for s in m["sets"])' out.txt &&
  ok || bad "a fresh cache reported a hit"
run "$TENET" workload -t switch-8 w/dp -o d2 -j 2
desc="workload -j 2"; expect_rc 0
diff -r d1/sets d2/sets >/dev/null && ok || bad "-j 1 and -j 2 wrote different sets"
run "$TENET" workload -t switch-8 w/dp -o d3 --cache cache --json
desc="workload from the cache"; expect_rc 0
$PY -c 'import json,sys; m=json.load(open(sys.argv[1])); assert all(s["cached"] for s in m["sets"])' out.txt &&
  ok || bad "the cache was not used"
cp out.txt d3.json
# The sets' names carry the digest of the sources that made them (a cache another build
# filled is not read back); the manifest and --version name the same digest.
digest=$("$TENET" --version | sed -n 's/.*(sources \([0-9a-f]\{16\}\))$/\1/p')
$PY -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["tenet_source"] == sys.argv[2] != "", m.get("tenet_source")' \
  d3/workload.json "$digest" && ok || bad "the manifest's tenet_source is not --version's digest"
# A set stored in the cache is linked into the directory, not written twice; its time
# alone is stored beside it (NAME.time) and read back, not simulated again, only while it
# names the very set (its set id).
for f in d1/sets/*.0.et; do
  [ "$(stat -c %i "$f")" = "$(stat -c %i "cache/$(basename "$f")")" ] && ok || bad "$f not linked from the cache"
done
$PY - d1/workload.json cache <<'PYEOF' && ok || bad "NAME.time"
import json, os, sys
m = json.load(open(sys.argv[1]))
for s in m["sets"]:
    t = open(os.path.join(sys.argv[2], os.path.basename(s["set"]) + ".time")).read()
    magic, one, sid, ps, rest = t.split(" ")[0], t.split(" ")[1], t.split(" ")[2], t.split(" ")[3], t[-1]
    assert magic == "tenet-set-time" and one == "1" and len(sid) == 16 and rest == "\n", t
    assert abs(int(ps) / 1000 - float(s["time_ns"])) < 1e-3, (t, s)
PYEOF
cp -r cache cache.good
for f in cache/*.time; do
  read -r magic v id ps < "$f"
  printf '%s %s %016x %s\n' "$magic" "$v" $((0x$id ^ 1)) $((ps * 2)) > "$f" # another set's id
done
run "$TENET" workload -t switch-8 w/dp -o d5 --cache cache --json
desc="workload from the cache, NAME.time of another set"; expect_rc 0
$PY - d3.json out.txt <<'PYEOF' && ok || bad "a NAME.time naming another set was believed"
import json, sys
a, b = (json.load(open(p))["sets"] for p in sys.argv[1:3])
assert all(y["cached"] for y in b), b
assert [x["time_ns"] for x in a] == [y["time_ns"] for y in b], (a, b)
PYEOF
diff -r cache.good cache >/dev/null && ok || bad "NAME.time not stored again after the simulation"
# A set whose gates list a dependency twice (All-to-All on a mesh) reads back listing it
# once: its NAME.time, stored when it was made, still names it as read, so the next run
# takes the time from it and stores nothing again.
run "$TENET" workload example mixed -n 16 --layers 12 -s 1MiB --compute-us 10 -o w/mixed16
desc="example mixed 16"; expect_rc 0
run "$TENET" workload -t mesh-4x4 w/mixed16 -o m1 --cache cache16 --json
desc="workload mixed 16 --cache"; expect_rc 0
cp -r cache16 cache16.made
run "$TENET" workload -t mesh-4x4 w/mixed16 -o m2 --cache cache16 --json
desc="workload mixed 16 from the cache"; expect_rc 0
$PY -c 'import json,sys; m=json.load(open(sys.argv[1])); assert all(s["cached"] for s in m["sets"]) and any(s["collective"] == "alltoall" for s in m["sets"])' out.txt &&
  ok || bad "mixed 16: the cache was not used"
diff -r cache16.made cache16 >/dev/null && ok || bad "a NAME.time stored with a set was not believed on the next run"
# A set cached for another algorithm is not reused.
run "$TENET" workload -t switch-8 w/dp -o d4 --cache cache -a direct --json
$PY -c 'import json,sys; m=json.load(open(sys.argv[1])); assert not any(s["cached"] for s in m["sets"])' out.txt &&
  ok || bad "-a direct reused auto's sets"

# A fabric ASTRA-sim's backend cannot express: everything but network.yml and run.sh.
run "$TENET" workload example tp -n 16 -s 1MiB --compute-us 10 -o w/tp
run "$TENET" workload -t mesh-4x4 w/tp -o m44
desc="workload mesh-4x4"; expect_rc 0
[ -e m44/per_node.yaml ] && [ ! -e m44/run.sh ] && [ ! -e m44/network.yml ] && ok || bad "mesh-4x4 files"
grep -q "no network.yml or run.sh" out.txt && ok || bad "mesh-4x4 says why"

# Pipeline: point-to-point messages only (no collective, no set).
run "$TENET" workload example pp -n 4 --layers 3 -s 1MiB --compute-us 100 -o w/pp
run "$TENET" workload -t ring-4 w/pp -o pp --json
desc="workload pp"; expect_rc 0
# (3 + 3) forwards of 100 us and 3 hops of 500 ns + 1 MiB at 50 GiB/s.
[ "$(json_get out.txt step_ns)" = "$($PY -c 'print(6 * 100000 + 3 * (500 + 19531.25))')" ] && ok ||
  bad "pp step $(json_get out.txt step_ns)"

# run.sh against a stand-in that prints ASTRA-sim's lines.
cat >fake.sh <<'SH'
#!/bin/sh
echo "[workload] [info] sys[0] finished, 4100 cycles, exposed communication 100 cycles."
echo "[workload] [info] sys[1] finished, 4200 cycles, exposed communication 200 cycles."
SH
chmod +x fake.sh
ASTRA_SIM="$SCRATCH/fake.sh" "$D/run.sh" >rs.txt 2>&1 && grep -q "ASTRA-sim: step 4200 ns; tenet predicted" rs.txt &&
  ok || bad "run.sh: $(cat rs.txt)"

# Bad input: one line, exit 1, nothing written.
mkdir -p w7 && for r in 0 1 2 3 4 5 6; do cp w/dp.$r.et w7/dp.$r.et; done
fails_with 1 "$TENET" workload -t ring-8 w7/dp -o bad1
expect_msg "w7/dp.7.et is missing"
fails_with 1 "$TENET" workload -t ring-8 w/nothing -o bad2
mkdir -p full && echo x >full/keep
fails_with 1 "$TENET" workload -t ring-8 w/dp -o full
expect_msg "not empty"
fails_with 1 "$TENET" workload -t ring-8 w/dp
echo x >notadir
fails_with 1 "$TENET" workload -t ring-8 w/dp -o bad3 --cache notadir
expect_msg "--cache notadir: exists and is not a directory"
fails_with 1 "$TENET" workload example dp -n 1 -o w/one
fails_with 1 "$TENET" workload example nosuch -n 4 -o w/x
SUBCMD=sim
fails_with 1 "$TENET" sim -t ring-8 w/dp --workload "$D" -c allreduce
fails_with 1 "$TENET" sim -t ring-8 w/dp --workload nodir
expect_msg "nodir/workload.json"
fails_with 1 "$TENET" sim -t ring-8 w/tp --workload "$D"
expect_msg "a workload of 16 ranks, but the fabric 'ring-8' has 8 NPUs"
# The manifest names each collective's set by its node: a collective it names none for is
# refused naming its node; a node listed twice takes its last entry.
cp -r "$D" mnoset && $PY - mnoset/workload.json <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["collectives"][0]["set"] = None
json.dump(m, open(sys.argv[1], "w"))
PYEOF
cp -r "$D" mtwice && $PY - mtwice/workload.json <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
c = dict(m["collectives"][0])
c["set"] = "sets/nosuch"
m["collectives"].append(c)
json.dump(m, open(sys.argv[1], "w"))
PYEOF
node0=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["node"])' "$D/workload.json")
fails_with 1 "$TENET" sim -t ring-8 w/dp --workload mnoset
expect_msg "collective node $node0 ("
expect_msg "has no set there"
fails_with 1 "$TENET" sim -t ring-8 w/dp --workload mtwice
expect_msg "mtwice/sets/nosuch"
SUBCMD=workload

# Workloads with faults, written record by record with protobuf's Python runtime.
if $PY -c 'import google.protobuf' 2>/dev/null && command -v protoc >/dev/null &&
  mkdir -p gen && protoc --python_out=gen --proto_path="$SRC/emit/chakra" "$SRC/emit/chakra/et_def.proto"; then
  $PY - gen bad <<'PYEOF' && ok || bad "writing faulty workloads"
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import et_def_pb2 as pb
def varint(n):
    out = b""
    while True:
        b = n & 0x7F; n >>= 7
        if n: out += bytes([b | 0x80])
        else: return out + bytes([b])
def write(prefix, rank, nodes):
    md = pb.GlobalMetadata(version="0.0.4").SerializeToString()
    with open("%s.%d.et" % (prefix, rank), "wb") as f:
        f.write(varint(len(md)) + md)
        for n in nodes:
            b = n.SerializeToString(); f.write(varint(len(b)) + b)
def coll(i, size, deps=()):
    n = pb.Node(id=i, name="c%d" % i, type=pb.COMM_COLL_NODE, data_deps=list(deps))
    n.attr.add(name="comm_type", int64_val=pb.ALL_REDUCE)
    n.attr.add(name="comm_size", int64_val=size)
    return n
def comp(i, deps=()):
    return pb.Node(id=i, name="k%d" % i, type=pb.COMP_NODE, duration_micros=5, data_deps=list(deps))
pre = sys.argv[2]
for r in range(4):  # size differs on rank 2
    write(pre + "_size", r, [comp(1), coll(2, 4096 if r == 2 else 8192, [1])])
for r in range(4):  # a cycle on rank 1
    write(pre + "_cycle", r, [comp(1, [3] if r == 1 else []), coll(2, 8192, [1]), comp(3, [2])])
for r in range(4):  # rank 3 lacks the collective
    write(pre + "_missing", r, [comp(1)] + ([coll(2, 8192, [1])] if r != 3 else []))
def grouped(i, size, pg, deps=()):
    n = coll(i, size, deps)
    n.attr.add(name="pg_name", string_val=pg)
    return n
for r in range(4):  # process groups {0, 1} and {2, 3}, then a collective of every rank
    write(pre + "_pg", r, [comp(1), grouped(2, 8192, "1" if r < 2 else "2", [1]), coll(3, 8192, [2])])
for r in range(4):  # ASTRA-sim's microbenchmarks: rank r's collective has the id r
    write(pre + "_byid", r, [comp(100), coll(10 + r, 8192, [100])])
PYEOF
  run "$TENET" workload -t ring-4 bad_byid -o byid
  desc="collectives paired by order"; expect_rc 0
  [ "$(grep -c '^1[0-3]: ' byid/per_node.yaml)" = 4 ] && ok || bad "per_node.yaml: $(cat byid/per_node.yaml)"
  run "$TENET" workload -t ring-4 bad_pg -o pg --json
  desc="process groups"; expect_rc 0
  $PY - pg out.txt <<'PYEOF2' && ok || bad "process groups: $(cat pg/comm_group.json)"
import json, os, sys
d = sys.argv[1]
assert json.load(open(os.path.join(d, "comm_group.json"))) == {"1": [0, 1], "2": [2, 3]}
m = json.load(open(sys.argv[2]))
left = [c for c in m["collectives"] if c["set"] is None]
assert len(left) == 2 and all("process group" in c["fallback"] for c in left), m["collectives"]
assert "--comm-group-configuration" in open(os.path.join(d, "run.sh")).read()
assert sorted(int(l.split(":")[0]) for l in open(os.path.join(d, "per_node.yaml")) if not l.startswith("#")) == [3]
PYEOF2
  fails_with 1 "$TENET" workload -t ring-4 bad_size -o x1
  expect_msg "node 2: collective of 8192 bytes on rank 0 but 4096 bytes on rank 2"
  fails_with 1 "$TENET" workload -t ring-4 bad_cycle -o x2
  expect_msg "rank 1: dependency cycle through nodes"
  fails_with 1 "$TENET" workload -t ring-4 bad_missing -o x3
  expect_msg "rank 3 holds 0 of its collectives"
  # A cached set edited so that it reads but no longer verifies (a SEND one byte larger
  # than its RECV) is not used: a note, and the set is made again and verified.
  cp -r cache.good cache.edited
  first=$(ls cache.edited/*.3.et | head -1)
  name=$(basename "$first" .3.et)
  $PY "$SRC/tests/cli/chakra_mutate.py" gen "$first" size || bad "chakra_mutate.py size failed"
  run "$TENET" workload -t switch-8 w/dp -o d6 --cache cache.edited --json
  desc="workload with an edited cached set"; expect_rc 0
  expect_msg "cached set cache.edited/$name not used: it fails verification"
  $PY - out.txt "$name" <<'PYEOF' && ok || bad "the edited set was used"
import json, sys
m = json.load(open(sys.argv[1]))
s = {x["set"].split("/")[-1]: x["cached"] for x in m["sets"]}
assert s[sys.argv[2]] is False and sum(s.values()) == len(s) - 1, s
PYEOF
  "$TENET" verify -t switch-8 -c "$(echo "$name" | cut -d- -f1)" -s "$(echo "$name" | cut -d- -f2)B" "cache.edited/$name" >/dev/null 2>&1 &&
    ok || bad "the set stored again does not verify"
else
  bad "faulty workloads need $PY with google.protobuf and protoc (scripts/install-deps.sh installs them)"
fi

testlib_done
