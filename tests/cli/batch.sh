#!/usr/bin/env bash
# tests/cli/batch.sh — `tenet batch`: a small sweep (ring-8, fc-8 at 1MiB), resume after
# SIGINT and SIGTERM, shards merged equal to one run byte for byte, manifests, a failing
# case recorded while the others finish, and bad arguments.
# Usage: bash batch.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" batch

same() { cmp -s "$1/summary.json" "$2/summary.json" && cmp -s "$1/summary.csv" "$2/summary.csv"; }
# No case is half-written: every case folder with files has a valid result.json, and no
# temporary file is left anywhere.
no_half_cases() {
  local d=$1
  [ -z "$(find "$d" -name '*.tmp.*')" ] || return 1
  for c in $(find "$d/cases" -mindepth 4 -maxdepth 4 -type d 2>/dev/null); do
    if [ -e "$c/result.json" ]; then
      json_ok "$c/result.json" || return 1
    fi
  done
}
ALGOS=greedy,ring,direct; NA=3
N=$((4 * NA))
A=(--topos ring-8,fc-8 --colls allgather,allreduce --sizes 1MiB --algos $ALGOS)

# One whole run: 2 x 2 x 1 x NA cases.
"$TENET" batch "${A[@]}" -o full 2>full.err
check "full run exit 0" test $? -eq 0
check "summary rows" test "$(grep -c '"status":"ok"' full/summary.json)" -eq $N
check "summary csv" test "$(wc -l <full/summary.csv)" -eq $((N + 1))
check "no chakra set by default (--keep results)" test -z "$(find full -name '*.et')"
check "result last" test -e full/cases/fc-8/allreduce/1MiB/ring/result.json
python3 - full/summary.json $ALGOS <<'PY' && ok || bad "summary keys and order"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
algos = sys.argv[2].split(",")
na = len(algos)
keys = ["topology", "collective", "algorithm", "size_bytes", "time_ns", "busbw_GBps",
        "lower_bound_ns", "status", "error"]
assert all(k in r for r in rows for k in keys)
assert [r["case"] for r in rows] == list(range(4 * na))
assert [r["topology"] for r in rows] == ["ring-8"] * 2 * na + ["fc-8"] * 2 * na
assert [r["algorithm"] for r in rows[:na]] == algos
PY

# Rerun: everything is complete, nothing runs, same summary.
cp -r full again
"$TENET" batch "${A[@]}" -o again 2>again.err
check "rerun exit 0" test $? -eq 0
check "rerun skips" grep -q "$N cases (0 run, $N done before" again.err
check "rerun same summary" same full again

# Interrupt halfway (cases slowed down for the test), then resume.
for sig in INT TERM; do
  d=kill$sig
  TENET_BATCH_TEST_DELAY_MS=600 "$TENET" batch "${A[@]}" -j 2 -o $d 2>$d.err &
  pid=$!
  # Stop it once the first case is complete (poll: the machine may be busy).
  for _ in $(seq 1 300); do
    [ -n "$(find $d -name result.json 2>/dev/null | head -n 1)" ] && break
    sleep 0.1
  done
  kill -$sig $pid
  wait $pid; rc=$?
  want=130; [ $sig = TERM ] && want=143
  check "SIG$sig exit $want (got $rc)" test $rc -eq $want
  check "SIG$sig says how to resume" grep -q 'run the same command to resume' $d.err
  n=$(find $d -name result.json | wc -l)
  check "SIG$sig stopped halfway ($n results)" test "$n" -gt 0 -a "$n" -lt $N
  check "SIG$sig no summary" test ! -e $d/summary.json
  check "SIG$sig no half-written case" no_half_cases $d
  "$TENET" batch "${A[@]}" -o $d 2>$d.err2
  check "SIG$sig resume exit 0" test $? -eq 0
  check "SIG$sig resume ran the rest" grep -q "$((N - n)) run, $n done before" $d.err2
  check "SIG$sig resumed summary equals one run" same full $d
done

# Shards with different thread counts, merged: the same summary byte for byte.
"$TENET" batch "${A[@]}" --shard 0/2 -j 1 -o s0 2>/dev/null
check "shard 0 exit 0" test $? -eq 0
"$TENET" batch "${A[@]}" --shard 1/2 -j 2 -o s1 2>/dev/null
check "shard 1 exit 0" test $? -eq 0
check "shards split the cases" test "$(cat s0/summary.json s1/summary.json | grep -c '"case"')" -eq $N
"$TENET" batch merge s0 s1 -o merged 2>/dev/null
check "merge exit 0" test $? -eq 0
check "merged equals one run" same full merged
"$TENET" batch merge s1 s0 -o merged2 2>/dev/null
check "merge order does not matter" same full merged2
# Three shards are dealt by estimated cost, not by case number: numbering puts the NA
# algorithms of a fabric, collective and size next to each other, so "number % 3" gave
# shard 0 every greedy case.
for i in 0 1 2; do
  "$TENET" batch "${A[@]}" --shard $i/3 -o t$i 2>/dev/null
  check "shard $i/3 exit 0" test $? -eq 0
done
python3 - t0 t1 t2 $N <<'PY' && ok || bad "shards balance the greedy cases and cover every case once"
import json, sys
rows = [[r for r in json.load(open(d + "/summary.json"))["rows"]] for d in sys.argv[1:4]]
cases = sorted(r["case"] for rs in rows for r in rs)
assert cases == list(range(int(sys.argv[4]))), cases
greedy = [sum(r["algorithm"] == "greedy" for r in rs) for rs in rows]
assert max(greedy) <= 2, greedy
PY
"$TENET" batch merge t2 t0 t1 -o merged3 2>/dev/null
check "three shards merged equal one run" same full merged3
fails_with 2 "$TENET" batch merge s0 -o partial
check "incomplete merge names the missing shard" grep -q 'shard 1/2 is not among them' err.txt
check "incomplete merge writes nothing" test ! -e partial/summary.json
fails_with 2 "$TENET" batch merge t1 -o partial
check "incomplete merge counts the missing cases" \
  grep -q "$((N - $(grep -c '"case"' t1/summary.json))) of $N cases have no result" err.txt
check "incomplete merge names every missing shard" grep -q 'shards 0/3, 2/3 are not among them' err.txt
python3 - err.txt t0 t2 <<'PY' && ok || bad "incomplete merge lists every missing case"
import json, re, sys
line = open(sys.argv[1]).read()
listed = set()
for part in line.rsplit(": cases ", 1)[1].strip().split(", "):
    a, _, b = part.partition("-")
    listed.update(range(int(a), int(b or a) + 1))
want = {r["case"] for d in sys.argv[2:] for r in json.load(open(d + "/summary.json"))["rows"]}
assert listed == want, (listed, want)
PY
# Merging into one of the folders merged is refused (it would mix its cases with the
# merge's), however the folder is spelled.
fails_with 1 "$TENET" batch merge s0 s1 -o s0
check "merge into an input names it" grep -q "s0 is one of the folders to merge" err.txt
fails_with 1 "$TENET" batch merge s0 s1 -o ./s1/

# A manifest describing the same sweep gives the same summary.
cat >sweep.txt <<'TXT'
# the small sweep of this test
topos  ring-8, fc-8
colls  allgather
colls  allreduce    # a key may repeat
sizes  1MiB
algos: ALGOS
seed   1
TXT
sed -i "s/ALGOS/$ALGOS/" sweep.txt
"$TENET" batch --manifest sweep.txt -o viaman 2>/dev/null
check "manifest run exit 0" test $? -eq 0
check "manifest equals lists" same full viaman

# A failing case is recorded; the others finish; exit 2.
cat >split.json <<'JSON'
{"name": "split", "npus": 4, "switches": 0,
 "links": [{"src": 0, "dst": 1, "bandwidth": 50, "latency": 500},
           {"src": 2, "dst": 3, "bandwidth": 50, "latency": 500}]}
JSON
"$TENET" batch --topos ring-8,split.json --colls allgather --sizes 1MiB --algos $ALGOS -o withfail 2>withfail.err
check "failing case exit 2" test $? -eq 2
check "failed rows recorded" test "$(grep -c '"status":"error"' withfail/summary.json)" -eq $NA
check "failure names the cause" grep -q 'disconnected' withfail/summary.csv
check "others ok" test "$(grep -c '"status":"ok"' withfail/summary.json)" -eq $NA

# Bad arguments: exit 1, one line.
fails_with 1 "$TENET" batch "${A[@]}"
fails_with 1 "$TENET" batch --topos ring-8 --colls allgather -o x
fails_with 1 "$TENET" batch "${A[@]}" --shard 2/2 -o x
fails_with 1 "$TENET" batch "${A[@]}" --jobs 0 -o x
fails_with 1 "$TENET" batch --topos ring-8 --colls gather --sizes 1MiB -o x
fails_with 1 "$TENET" batch --topos no-such.json --colls allgather --sizes 1MiB -o x
printf '{"name": "cut",' >cut.json
fails_with 1 "$TENET" batch --topos ring-8,cut.json --colls allgather --sizes 1MiB -o x
check "a malformed fabric is refused as compare refuses it" grep -q 'cut.json:1:16: malformed JSON' err.txt
fails_with 1 "$TENET" batch --topos ring-8 --colls allgather --sizes 1MiB --algos tacos -o x
printf 'topos ring-8\ncolls allgather\ntopo fc-8\nsizes 1MiB\nalgos ring\n' >badman.txt
fails_with 1 "$TENET" batch --manifest badman.txt -o x
check "manifest error names line" grep -q "badman.txt:3: unknown key 'topo'" err.txt
fails_with 1 "$TENET" batch --manifest sweep.txt --algos greedy -o x
check "--algos with a manifest is refused" grep -q -- "--manifest replaces" err.txt
"$TENET" batch --help >help.txt
check "help says how shards are dealt" grep -q 'dealt by' help.txt
fails_with 1 "$TENET" batch --topos ring-8 --colls allgather --sizes 4MiB -o full
check "a different sweep is refused" grep -q 'different sweep' err.txt
mkdir -p damaged && printf '{"tenet_batch": 1, "seed": ' >damaged/batch.json
fails_with 1 "$TENET" batch --topos ring-8 --colls allgather --sizes 4MiB -o damaged
check "a damaged batch.json is named as such" grep -q 'batch.json: not valid JSON (a damaged' err.txt
check "nothing written for bad arguments" test ! -e x

# batch.json keeps the seed as an exact JSON number, read back exactly on resume.
big=18446744073709551615
B=(--topos ring-4 --colls allgather --sizes 1KiB --algos ring --seed $big)
"$TENET" batch "${B[@]}" -o seeded 2>/dev/null
check "seed run exit 0" test $? -eq 0
check "seed is an exact JSON number" grep -Eq "\"seed\":[[:space:]]*$big,?\$" seeded/batch.json
"$TENET" batch "${B[@]}" -o seeded 2>seeded.err
check "seed resume is the same sweep" grep -q "1 done before" seeded.err

# --seeds N: each greedy, milp or auto case keeps the best of seeds --seed .. --seed+N-1, as
# 'tenet synth --seeds' does, and says which won. mesh-4x4 All-Reduce 16 MiB: the greedy's
# seeds 5..7 give 241.458, 240.958 and 241.958 us, so seed 6 wins; Ring takes no seed.
S=(--topos mesh-4x4 --colls allreduce --sizes 16MiB --algos greedy,ring --seed 5 --seeds 3)
"$TENET" batch "${S[@]}" -o seeds 2>/dev/null
check "seeds run exit 0" test $? -eq 0
"$TENET" synth -t mesh-4x4 -c allreduce -s 16MiB -a greedy --seed 6 -o seeds2/s --json >seeds2.json
check "seeds: the greedy case keeps seed 6, the best of 3, at its time" python3 -c '
import json, sys
g = json.load(open("seeds/cases/mesh-4x4/allreduce/16MiB/greedy/result.json"))
r = json.load(open("seeds/cases/mesh-4x4/allreduce/16MiB/ring/result.json"))
s = json.load(open("seeds2.json"))
assert g["seed"] == 6 and g["seeds_tried"] == 3 and g["time_ns"] == s["time_ns"], (g, s)
assert r["seeds_tried"] == 1, r
b = json.load(open("seeds/batch.json"))
assert b["seeds"] == 3, b
'
check "one seed writes no seeds key" sh -c '! grep -q seeds seeded/batch.json'
"$TENET" batch "${S[@]}" -o seeds 2>seeds.err
check "seeds resume is the same sweep" grep -q "2 done before" seeds.err
fails_with 1 "$TENET" batch --topos mesh-4x4 --colls allreduce --sizes 16MiB --algos greedy,ring --seed 5 --seeds 4 -o seeds
check "other --seeds is another sweep" grep -q 'different sweep' err.txt
printf 'topos mesh-4x4\ncolls allreduce\nsizes 16MiB\nalgos greedy\nseed 1\nseeds 3\n' >seeds.txt
"$TENET" batch --manifest seeds.txt -o seedsm 2>/dev/null
check "manifest seeds" grep -q '"seeds_tried":3' seedsm/cases/mesh-4x4/allreduce/16MiB/greedy/result.json
printf 'topos mesh-4x4\ncolls allreduce\nsizes 16MiB\nalgos greedy\nseeds 0\n' >seeds0.txt
fails_with 1 "$TENET" batch --manifest seeds0.txt -o seeds0
check "manifest seeds 0 is refused with its line" grep -q 'seeds0.txt:5: seeds' err.txt
fails_with 1 "$TENET" batch --manifest seeds.txt --seeds 2 -o seeds3
check "--seeds with --manifest is refused" grep -q -- '--seeds' err.txt
fails_with 1 "$TENET" batch --topos ring-4 --colls allgather --sizes 1KiB --seeds 1001 -o seeds4
check "--seeds over 1000 is refused" grep -q -- '--seeds' err.txt

# CSV text fields follow one rule in batch and compare: quoted, inner quotes doubled.
cp "$SRC/topologies/ring-4.json" 'q"x.json'
"$TENET" compare -t 'q"x.json' -c allgather --sizes 1KiB --algos ring --csv cmp.csv >/dev/null
"$TENET" batch --topos 'q"x.json' --colls allgather --sizes 1KiB --algos ring -o quoted 2>/dev/null
check "quoted batch exit 0" test $? -eq 0
check "csv quotes like compare" test "$(sed -n 2p cmp.csv | cut -d, -f1,3,4)" = \
  "$(sed -n 2p quoted/summary.csv | cut -d, -f2,4,5)"
check "csv doubles inner quotes" grep -q '^0,"q""x",' quoted/summary.csv

# Resume is keyed by the content of every input: a fabric file that changed (10 -> 100
# GB/s) reruns its cases; the unchanged ones stay done.
sed 's/"bandwidth": 50/"bandwidth": 10/' "$SRC/topologies/ring-4.json" >fab.json
R=(--topos fab.json,ring-8 --colls allgather --sizes 1MiB --algos ring)
"$TENET" batch "${R[@]}" -o keyed 2>/dev/null
check "keyed run exit 0" test $? -eq 0
slow=$(grep -o '"time_ns":[0-9.]*' keyed/summary.json | head -n 1)
sed -i 's/"bandwidth": 10/"bandwidth": 100/' fab.json
"$TENET" batch "${R[@]}" -o keyed 2>keyed.err
check "changed fabric reruns its case only" grep -q "2 cases (1 run, 1 done before" keyed.err
check "rerun result is new" test "$(grep -o '"time_ns":[0-9.]*' keyed/summary.json | head -n 1)" != "$slow"

# --keep: all writes every case's Chakra set, best only the fastest algorithm's per
# fabric, collective and size (also when sharded: a shard holds whole groups).
"$TENET" batch "${A[@]}" --keep all -o keepall 2>/dev/null
check "keep all exit 0" test $? -eq 0
check "keep all: every set" test "$(find keepall -name chakra.7.et | wc -l)" -eq $N
check "keep all: same summary" same full keepall
for d in keepbest "keepbest0 --shard 0/3" "keepbest1 --shard 1/3" "keepbest2 --shard 2/3"; do
  set -- $d
  "$TENET" batch "${A[@]}" --keep best -o "$@" 2>/dev/null
  check "keep best $* exit 0" test $? -eq 0
done
python3 - full/summary.json keepbest keepbest0,keepbest1,keepbest2 <<'PY' && ok || bad "keep best keeps exactly the fastest set of each group"
import json, os, sys
rows = json.load(open(sys.argv[1]))["rows"]
best = {}
for r in rows:
    if r["status"] != "ok":
        continue
    g = (r["topology"], r["collective"], r["size_bytes"])
    if g not in best or r["time_ns"] < best[g]["time_ns"]:
        best[g] = r
want = sorted("cases/%s/%s/1MiB/%s" % (r["topology"], r["collective"], r["algorithm"]) for r in best.values())
for dirs in (sys.argv[2].split(","), sys.argv[3].split(",")):
    have = sorted(os.path.relpath(root, d) for d in dirs for root, _, files in os.walk(d)
                  if "chakra.0.et" in files)
    assert have == want, (dirs, have, want)
PY
"$TENET" batch merge keepbest0 keepbest1 keepbest2 -o keepbestm 2>/dev/null
check "keep best shards merge to one run" same full keepbestm
fails_with 1 "$TENET" batch "${A[@]}" --keep all -o full
check "another --keep on a folder is refused" grep -q 'was run with --keep results' err.txt
fails_with 1 "$TENET" batch "${A[@]}" --keep some -o x

# A pair of the cross product that means nothing (ring x alltoall) is n/a, not a failure:
# exit 0, recorded once, not run again.
run "$TENET" batch --topos ring-4 --colls alltoall,allgather --sizes 64KiB --algos ring,direct -o na
desc="ring x alltoall"; expect_rc 0
grep -q "(3 run, 0 done before, 0 failed, 1 n/a)" err.txt && ok || bad "n/a summary: $(tail -n 1 err.txt)"
grep -q "\] n/a ring-4/alltoall/64KiB/ring" err.txt && ok || bad "n/a line: $(cat err.txt)"
python3 - na/summary.json <<'PY' && ok || bad "n/a row"
import json, sys
rows = {(r["collective"], r["algorithm"]): r for r in json.load(open(sys.argv[1]))["rows"]}
r = rows[("alltoall", "ring")]
assert r["status"] == "n/a" and "All-to-All" in r["error"] and r["time_ns"] is None, r
assert all(v["status"] == "ok" for k, v in rows.items() if k != ("alltoall", "ring")), rows
PY
run "$TENET" batch --topos ring-4 --colls alltoall,allgather --sizes 64KiB --algos ring,direct -o na
grep -q "(0 run, 4 done before, 0 failed, 0 n/a)" err.txt && ok || bad "n/a resumed: $(tail -n 1 err.txt)"

# The MILP on two worker threads: every thread frees GLPK's environment (LeakSanitizer in
# the ASan build fails the run otherwise); --time-limit is the MILP's safety net.
run "$TENET" batch --topos ring-4,mesh-2x2 --colls allgather --sizes 1MiB --algos milp,greedy \
  -j 2 --time-limit 20 -o milpj2
expect_rc 0
check "batch milp -j 2: every case ok" grep -q '"status":"ok"' milpj2/summary.json
fails_with 1 "$TENET" batch --topos ring-4 --colls allgather --sizes 4KiB --algos milp \
  --time-limit 0 -o milpbad
check "batch --time-limit 0 is refused" grep -q -- '--time-limit' err.txt

testlib_done
