#!/usr/bin/env bash
# tests/cli/compare.sh — `tenet compare`: table, --json, --csv, --plot, determinism and
# errors. Usage: bash compare.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" compare

ALGOS=greedy,ring,direct; NA=3

check "help" "$TENET" compare --help >/dev/null
"$TENET" compare --help | grep -q -- '--plot' && ok || bad "help mentions --plot"

# Table on stdout.
"$TENET" compare -t ring-8 -c allgather --sizes 1MiB,4MiB --algos $ALGOS >table.txt 2>err.txt
check "table run" test $? -eq 0
check "table header" grep -q 'busbw GB/s' table.txt
check "table rows" test "$(grep -cE '^(1MiB|4MiB) +(greedy|ring|direct) ' table.txt)" -eq $((2 * NA))
check "ring is 1.00x" grep -qE '^1MiB +ring .* 1\.00x$' table.txt

# The default compares the portfolio with Ring and Direct and names what it chose.
"$TENET" compare -t spine-4x8 -c allgather --sizes 64MiB >auto.txt
check "auto run" test $? -eq 0
check "auto row names its choice" grep -qE '^64MiB +auto:forest ' auto.txt
check "auto and baselines" test "$(grep -cE '^64MiB +(auto:[a-z]+|ring|direct) ' auto.txt)" -eq 3

# JSON: exactly one object with rows and the contract keys.
"$TENET" compare -t ring-8 -c allreduce --sizes 64KiB..256KiB --algos ${ALGOS%,direct} --json >a.json
check "json run" test $? -eq 0
check "json valid" json_ok a.json
python3 - a.json $((NA - 1)) <<'PY' && ok || bad "json rows and keys"
import json, sys
d = json.load(open(sys.argv[1]))
na = int(sys.argv[2])
assert list(d) == ["rows"], d.keys()
rows = d["rows"]
assert len(rows) == 3 * na, len(rows)
keys = ["npus", "collective", "algorithm", "size_bytes", "time_ns", "algbw_GBps", "busbw_GBps",
        "lower_bound_ns", "ratio_to_bound", "speedup_vs_ring"]
for r in rows:
    for k in keys:
        assert k in r, k
    assert r["collective"] == "allreduce" and r["npus"] == 8
    assert r["time_ns"] >= r["lower_bound_ns"] > 0
    assert abs(r["ratio_to_bound"] - r["time_ns"] / r["lower_bound_ns"]) < 1e-3
    if r["algorithm"] == "ring":
        assert abs(r["speedup_vs_ring"] - 1) < 1e-9
assert [r["size_bytes"] for r in rows] == [s for s in (65536, 131072, 262144) for _ in range(na)]
PY
"$TENET" compare -t ring-8 -c allreduce --sizes 64KiB..256KiB --algos ${ALGOS%,direct} --json --seed 1 -j 1 >b.json
check "json deterministic across -j" cmp -s a.json b.json

# CSV and plots, all or nothing.
"$TENET" compare -t fc-8 -c allgather --sizes 1KiB..64KiB --algos $ALGOS --csv r.csv --plot p.png >/dev/null
check "csv+png run" test $? -eq 0
check "csv lines" test "$(wc -l <r.csv)" -eq $((1 + 7 * NA))
check "csv header" grep -q '^topology,npus,collective,algorithm,size_bytes,time_ns' r.csv
check "png magic" is_png p.png
"$TENET" compare -t fc-8 -c allgather --sizes 1KiB..64KiB --algos $ALGOS --plot p.svg >/dev/null
check "svg written" grep -q '<svg' p.svg
check "no temp files" test -z "$(ls | grep '\.tmp\.')"

# --topo/--coll as in synth, and the long forms.
"$TENET" compare --topo ring-8 --coll allgather --sizes 1MiB --algos ring >alias1.txt 2>/dev/null
check "compare takes --topo and --coll" test $? -eq 0
"$TENET" compare --topology ring-8 --collective allgather --sizes 1MiB --algos ring >alias2.txt 2>/dev/null
check "and --topology and --collective, with the same table" cmp -s alias1.txt alias2.txt

# Errors: one line, exit code.
fails_with 1 "$TENET" compare -c allgather
fails_with 1 "$TENET" compare -t ring-8
fails_with 1 "$TENET" compare -t ring-8 -c allgather --algos greedy,tacos
fails_with 1 "$TENET" compare -t ring-8 -c allgather --sizes 1XB
fails_with 1 "$TENET" compare -t ring-8 -c allgather --plot p.pdf
fails_with 1 "$TENET" compare -t ring-8 -c allgather --sise 1MiB
fails_with 1 "$TENET" compare -t no-such-fabric -c allgather
check "no pdf" test ! -e p.pdf
cat >split.json <<'JSON'
{"name": "split", "npus": 4, "switches": 0,
 "links": [{"src": 0, "dst": 1, "bandwidth": 50, "latency": 500},
           {"src": 2, "dst": 3, "bandwidth": 50, "latency": 500}]}
JSON
fails_with 2 "$TENET" compare -t split.json -c allgather --sizes 1MiB --csv never.csv
check "no csv on failure" test ! -e never.csv
grep -q 'disconnected' err.txt && ok || bad "disconnected message"
# A plot that cannot be written takes the CSV with it, and a CSV that cannot be written
# the plot: both files or neither.
: >plainfile
fails_with 1 "$TENET" compare -t ring-8 -c allgather --sizes 1MiB --csv both.csv --plot plainfile/x.png
check "no csv without its plot" test ! -e both.csv
fails_with 1 "$TENET" compare -t ring-8 -c allgather --sizes 1MiB --csv plainfile/x.csv --plot both.png
check "no plot without its csv" test ! -e both.png

# --time-limit reaches the MILP (its safety net); the work limit stops it first.
run "$TENET" compare -t ring-4 -c allgather --sizes 4KiB,1MiB --algos milp,greedy --time-limit 20 \
  --json -j 2
expect_rc 0
check "compare milp rows" test "$(grep -o '"algorithm":"milp"' out.txt | wc -l)" -eq 2
fails_with 1 "$TENET" compare -t ring-4 -c allgather --sizes 4KiB --algos milp --time-limit 0
check "compare --time-limit 0 is refused" grep -q -- '--time-limit' err.txt

# The busbw axis: auto (log past a 10x span: 1 KiB..64 KiB on fc-8 spans 40x), log or
# linear, said in --help; a bad scale and a scale without a plot are refused.
"$TENET" compare --help | grep -q -- '--plot-y SCALE' && ok || bad "help mentions --plot-y"
"$TENET" compare -t fc-8 -c allgather --sizes 1KiB..64KiB --algos $ALGOS --plot y-auto.png >/dev/null &&
  "$TENET" compare -t fc-8 -c allgather --sizes 1KiB..64KiB --algos $ALGOS --plot y-log.png --plot-y log >/dev/null &&
  "$TENET" compare -t fc-8 -c allgather --sizes 1KiB..64KiB --algos $ALGOS --plot y-lin.png --plot-y linear >/dev/null &&
  cmp -s y-auto.png y-log.png && ! cmp -s y-auto.png y-lin.png && ok || bad "--plot-y auto is not log on a 40x span"
fails_with 1 "$TENET" compare -t ring-8 -c allgather --plot p.png --plot-y lg
check "--plot-y lg names the choices" grep -q -- "--plot-y 'lg': auto, log or linear" err.txt
fails_with 1 "$TENET" compare -t ring-8 -c allgather --plot-y log
check "--plot-y without --plot" grep -q -- "--plot-y needs --plot" err.txt

# --seeds: the greedy row keeps the fastest of seeds 5..7 (seed 6, 240.958 us on mesh-4x4
# All-Reduce 16 MiB; seed 5 alone: 241.458 us, seed 7 241.958) and names it; Ring takes no
# seed.
run "$TENET" compare -t mesh-4x4 -c allreduce --sizes 16MiB --algos greedy,ring --seed 5 --seeds 3 --json
[ "$rc" -eq 0 ] && python3 - out.txt <<'EOF' && ok || bad "compare --seeds: $(cat out.txt err.txt)"
import json, sys
g, r = json.load(open(sys.argv[1]))["rows"]
assert g["algorithm"] == "greedy" and g["seed"] == 6 and g["seeds_tried"] == 3 and g["time_ns"] == 240958.265, g
assert "seed" not in r, r
EOF
fails_with 1 "$TENET" compare -t ring-8 -c allgather --seeds 0
check "--seeds 0 is refused" grep -q -- '--seeds' err.txt

testlib_done
