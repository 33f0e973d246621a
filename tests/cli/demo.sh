#!/usr/bin/env bash
# tests/cli/demo.sh — `tenet demo --quick` into a scratch folder: tables printed, plots
# are valid PNG/SVG, Chakra sets and results written, the closing two lines.
# Usage: bash demo.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" demo
is_svg() { head -c 200 "$1" | grep -q '<?xml' && grep -q '</svg>' "$1"; }

check "help" "$TENET" demo --help >/dev/null
"$TENET" demo --quick -o out >stdout.txt 2>stderr.txt
rc=$?
check "demo exit 0 (got $rc: $(head -c 300 stderr.txt))" test $rc -eq 0
for f in mesh-8x8 mesh3d-4x4x4; do
  for c in allgather allreduce; do
    check "table $f $c" grep -q "^$f, $c, 64 NPUs" stdout.txt
    check "png $f-$c" is_png out/$f-$c.png
    check "svg $f-$c" is_svg out/$f-$c.svg
    for a in greedy ring direct; do
      check "chakra $f $c $a" test -s out/chakra/$f/$c-16MiB/$a.0.et -a -s out/chakra/$f/$c-16MiB/$a.63.et
    done
  done
  check "table $f alltoall" grep -q "^$f, alltoall, 64 NPUs" stdout.txt
  check "png $f-alltoall" is_png out/$f-alltoall.png
  for a in greedy direct; do
    check "chakra $f alltoall $a" test -s out/chakra/$f/alltoall-16MiB/$a.63.et
  done
  check "no ring alltoall" test ! -e out/chakra/$f/alltoall-16MiB/ring.0.et
done
for a in greedy ring; do
  check "link heatmap $a" is_png out/mesh-8x8-allgather-16MiB-$a-links.png
done
check "table header" grep -q 'busbw GB/s' stdout.txt
check "48 rows" test "$(grep -cE '^(4KiB|256KiB|16MiB) +(greedy|ring|direct) ' stdout.txt)" -eq 48
check "results.csv" test "$(wc -l <out/results.csv)" -eq 49
check "results.json" python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["rows"]) == 48' out/results.json
check "next-to-last line: what to open" test "$(tail -n 2 stdout.txt | head -n 1 | cut -c1-5)" = "Open "
last=$(tail -n 1 stdout.txt)
check "last line: ASTRA-sim" test "${last:0:10}" = "ASTRA-sim:"
check "last line: the run.sh to start" grep -q 'AstraSim_Analytical_Congestion_Aware /.*/out/astra-ring-8/run.sh' <<<"$last"
check "astra dir: a 1-D fabric" grep -q 'topology: \[ Ring \]' out/astra-ring-8/network.yml
check "astra dir: custom implementation" grep -q '"all-gather-implementation-custom":' out/astra-ring-8/system.json
check "astra dir: the set" test -s out/astra-ring-8/set/greedy.7.et
check "no temp files" test -z "$(find out -name '*.tmp.*')"
# greedy beats ring on the 8x8 mesh at 16 MiB
check "greedy beats ring at 16MiB" awk '/^mesh-8x8, allgather/{on=1} on && $1=="16MiB" && $2=="greedy" { if ($NF+0 > 1.0) found=1 } END { exit !found }' stdout.txt

testlib_done
