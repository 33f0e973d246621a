#!/usr/bin/env bash
# tests/cli/synth.sh — `tenet synth` end to end: every algorithm and collective on several
# fabrics is written, read back, verified and simulated; outputs are deterministic; bad
# input fails with one line and writes nothing. Usage: bash synth.sh TENET SCRATCH SOURCE
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" synth

# ---- --out and --output name the same option in every command ------------------------
desc="--output"
run "$TENET" synth -t ring-8 -c allgather -s 1MiB --output alias/x
expect_rc 0
[ -s alias/x.0.et ] && ok || bad "synth --output wrote nothing"

# ---- help ----------------------------------------------------------------------------
desc="help"
run "$TENET" synth --help
expect_rc 0
grep -q 'usage: tenet synth' out.txt && ok || bad "synth --help"

# ---- every baseline and the greedy, every collective, several fabrics -----------------
for topo in ring-8 mesh-2x4 torus-4x4 switch-8 fc-8 hypercube-16; do
  for coll in allgather reducescatter allreduce; do
    for algo in ring direct greedy; do
      desc="$algo $coll on $topo"
      p="out/$topo/$coll/$algo"
      run "$TENET" synth -t "$topo" -c "$coll" -s 1MiB -a "$algo" -o "$p" --json
      expect_rc 0
      [ "$rc" -eq 0 ] || continue
      expect_key algorithm "\"$algo\""
      expect_key collective "\"$coll\""
      expect_key size_bytes 1048576
      for k in npus time_ns algbw_GBps busbw_GBps lower_bound_ns synth_ms files; do
        flat | grep -q "\"$k\":" && ok || bad "$desc: no key $k"
      done
      [ -s "$p.0.et" ] && ok || bad "$desc: no $p.0.et"
      run "$TENET" verify -t "$topo" -c "$coll" -s 1MiB "$p"
      expect_rc 0
      grep -q 'semantics checked' out.txt && ok || bad "$desc: semantics not checked: $(cat out.txt)"
      run "$TENET" sim -t "$topo" "$p" --json
      expect_rc 0
    done
  done
done

# Simulated time reported by synth equals what `tenet sim` measures on the files.
desc="synth time equals sim time"
run "$TENET" synth -t mesh-2x4 -c allreduce -s 4MiB -o g/ar --json
t_synth=$(flat | sed 's/.*"time_ns":\([0-9.e+]*\).*/\1/')
run "$TENET" sim -t mesh-2x4 g/ar --json
t_sim=$(flat | sed 's/.*"time_ns":\([0-9.e+]*\).*/\1/')
case "$t_synth" in [0-9]*) ok ;; *) bad "$desc: synth printed no time" ;; esac
[ "$t_synth" = "$t_sim" ] && ok || bad "$desc: synth $t_synth ns, sim $t_sim ns"

# ---- All-to-All: greedy (routed pieces), direct and auto; ring and the others refuse ----
for topo in ring-8 torus-4x4 switch-8 spine-4x8; do
  for algo in greedy direct auto; do
    desc="$algo alltoall on $topo"
    p="a2a/$topo/$algo"
    run "$TENET" synth -t "$topo" -c alltoall -s 1MiB -a "$algo" -o "$p" --json
    expect_rc 0
    [ "$rc" -eq 0 ] || continue
    expect_key collective '"alltoall"'
    run "$TENET" verify -t "$topo" -c all-to-all -s 1MiB "$p"
    expect_rc 0
    grep -q 'semantics checked' out.txt && ok || bad "$desc: semantics not checked: $(cat out.txt)"
  done
done
desc="alltoall synth time equals sim time"
run "$TENET" synth -t torus-4x4 -c alltoall -s 4MiB -a greedy -o a2a/t --json
t_synth=$(flat | sed 's/.*"time_ns":\([0-9.e+]*\).*/\1/')
run "$TENET" sim -t torus-4x4 a2a/t --json
t_sim=$(flat | sed 's/.*"time_ns":\([0-9.e+]*\).*/\1/')
[ -n "$t_synth" ] && [ "$t_synth" = "$t_sim" ] && ok || bad "$desc: synth $t_synth ns, sim $t_sim ns"
expect_fail 1 "ring alltoall" "$TENET" synth -t ring-8 -c alltoall -s 1MiB -a ring -o bad/a2a
grep -q 'no All-to-All' err.txt && ok || bad "ring alltoall: $(cat err.txt)"
expect_fail 1 "forest alltoall" "$TENET" synth -t ring-8 -c alltoall -s 1MiB -a forest -o bad/a2a
[ ! -e bad/a2a.0.et ] && ok || bad "a refused alltoall wrote files"

# ---- dims: one dimension at a time on generated fabrics -------------------------------
for coll in allgather reducescatter allreduce; do
  desc="dims $coll on torus-4x4"
  run "$TENET" synth -t torus-4x4 -c $coll -s 1MiB -a dims -o dims/$coll --json
  expect_rc 0
  expect_key algorithm '"dims"'
  run "$TENET" verify -t torus-4x4 -c $coll -s 1MiB dims/$coll
  expect_rc 0
done
expect_fail 1 "dims on an explicit fabric" "$TENET" synth -t dgx1-8 -c allgather -s 1MiB -a dims -o bad/d
grep -q 'needs a generated fabric' err.txt && ok || bad "dims explicit: $(cat err.txt)"
[ ! -e bad/d.0.et ] && ok || bad "a refused dims wrote files"
desc="auto takes dims where the greedy is over the memory cap"
TENET_MEM_CAP=40MiB run "$TENET" synth -t mesh-16x16 -c allgather -s 1GiB -o dims/cap --json
expect_rc 0
expect_key algorithm '"dims"'

# ---- the MILP ----------------------------------------------------------------------
for coll in allgather reducescatter allreduce; do
  desc="milp $coll on ring-8"
  run "$TENET" synth -t ring-8 -c $coll -s 1MiB -a milp -o milp/$coll --json --time-limit 30
  expect_rc 0
  expect_key milp_status '"optimal"'
  run "$TENET" verify -t ring-8 -c $coll -s 1MiB milp/$coll
  expect_rc 0
done
desc="milp all-gather time equals its prediction"
run "$TENET" synth -t mesh-2x4 -c allgather -s 1MiB -a milp -o milp/m --json
t_pred=$(flat | sed 's/.*"predicted_ns":\([0-9.e+]*\).*/\1/')
t_sim=$(flat | sed 's/.*"time_ns":\([0-9.e+]*\).*/\1/')
[ -n "$t_pred" ] && [ "$t_pred" = "$t_sim" ] && ok || bad "$desc: predicted $t_pred, simulated $t_sim"
expect_fail 1 "milp time limit 0" "$TENET" synth -t ring-8 -c allgather -s 1MiB -a milp --time-limit 0 -o bad/x
expect_fail 2 "milp fabric too large" "$TENET" synth -t ring-100 -c allgather -s 1MiB -a milp -o bad/x
grep -q 'cap of 64' err.txt && ok || bad "milp fabric too large: $(cat err.txt)"
# One NPU: the reason names no collective the user did not ask for (it said "an
# All-Gather needs 2" for a Reduce-Scatter).
printf '{"name":"one","npus":1,"links":[]}' > one.json
expect_fail 1 "milp on one NPU" "$TENET" synth -t one.json -c reducescatter -s 1MiB -a milp -o bad/x
grep -q "has 1 NPU; it needs 2" err.txt && ! grep -q "All-Gather" err.txt && ok ||
  bad "milp on one NPU: $(cat err.txt)"
desc="milp model too large: the starting plan stands"
run "$TENET" synth -t ring-64 -c allgather -s 1MiB -a milp --chunks 16 -o milp/big --json
expect_rc 0
expect_key milp_stop '"modeltoolarge"'
# -a milp plans with the greedy's chunk count and never loses to the greedy
desc="milp at the greedy's chunk count"
run "$TENET" synth -t ring-8 -c allgather -s 1MiB -a milp -o milp/k --json
expect_key chunks_per_npu 2
expect_key time_ns 9044.921
expect_key milp_status '"optimal"'
desc="milp returns the greedy's algorithm when that is faster"
run "$TENET" synth -t ring-4 -c allgather -s 1MB --chunks 3 -a milp -o milp/g --json
expect_key milp_status '"greedy"'
expect_key algorithm '"greedy"'
"$TENET" synth -t ring-4 -c allgather -s 1MB --chunks 3 -a greedy -o milp/gg --json >gg.json
t_m=$(flat | sed 's/.*"time_ns":\([0-9.e+]*\).*/\1/')
grep -q "\"time_ns\":$t_m," gg.json && ok || bad "$desc: milp $t_m, greedy $(cat gg.json)"
# the stop is a count of work: the same bytes every time, whatever the load
desc="milp stopped by its work limit is deterministic"
for i in 1 2; do
  run "$TENET" synth -t mesh-2x4 -c allgather -s 1MiB --chunks 2 -a milp --iter-limit 100 -o wl$i/x --json
  expect_key milp_stop '"iterationlimit"'
done
same=1
for r in 0 1 2 3 4 5 6 7; do cmp -s wl1/x.$r.et wl2/x.$r.et || same=0; done
[ $same = 1 ] && ok || bad "$desc: the two runs' files differ"
desc="synth --help names the MILP's default work limits"
run "$TENET" synth --help
grep -q 'node-limit N.*default 1000' out.txt && grep -q 'iter-limit N' out.txt && ok || bad "$desc"
expect_fail 1 "milp iteration limit 0" "$TENET" synth -t ring-8 -c allgather -s 1MiB -a milp --iter-limit 0 -o bad/x

# ---- determinism ---------------------------------------------------------------------
desc="determinism"
for algo in greedy ring direct; do
  "$TENET" synth -t torus-4x4 -c allreduce -s 3MiB -a $algo -o d1/x --seed 7 >/dev/null 2>&1
  "$TENET" synth -t torus-4x4 -c allreduce -s 3MiB -a $algo -o d2/x --seed 7 >/dev/null 2>&1
  same=1
  for r in $(seq 0 15); do cmp -s d1/x.$r.et d2/x.$r.et || same=0; done
  [ $same -eq 1 ] && ok || bad "$desc: $algo output differs between two runs"
done

# ---- best of N seeds ------------------------------------------------------------------
# The greedy's seed moves mesh-4x4 All-Reduce 16 MiB at 2 chunks per NPU between 265.18
# and 275.44 us (its halves list-scheduled, greedy_allreduce_listed): seeds 2..4 give
# 274,940.5, 265,677.875 and 265,678.875 ns; seeds 6..8 265,175.875, 266,178.875 and
# 265,175.875. --seeds N tries --seed .. --seed+N-1 and keeps the fastest, the lowest seed
# on a tie: seeds 2..4 keep 3, byte for byte the set --seed 3 writes; seeds 6..8 (6 and 8
# tie) keep 6; --json says which seed won and how many were tried.
desc="--seeds"
mkdir -p seeds
for s in 2 3 4; do
  "$TENET" synth -t mesh-4x4 -c allreduce -s 16MiB -a greedy --chunks 2 --seed $s -o seeds/s$s --json >seeds/s$s.json ||
    bad "$desc: --seed $s"
done
"$TENET" synth -t mesh-4x4 -c allreduce -s 16MiB -a greedy --chunks 2 --seed 2 --seeds 3 -o seeds/best --json >seeds/best.json &&
  [ "$(json_get seeds/best.json seed)" = 3 ] && [ "$(json_get seeds/best.json seeds_tried)" = 3 ] &&
  [ "$(json_get seeds/best.json time_ns)" = "$(json_get seeds/s3.json time_ns)" ] &&
  [ "$(json_get seeds/s4.json time_ns)" != "$(json_get seeds/s3.json time_ns)" ] && ok ||
  bad "$desc: best of seeds 2..4: $(cat seeds/best.json)"
same=1
for r in $(seq 0 15); do cmp -s seeds/best.$r.et seeds/s3.$r.et || same=0; done
[ $same -eq 1 ] && ok || bad "$desc: the kept set is not --seed 3's"
"$TENET" synth -t mesh-4x4 -c allreduce -s 16MiB -a greedy --chunks 2 --seed 8 -o seeds/s8 --json >seeds/s8.json &&
  "$TENET" synth -t mesh-4x4 -c allreduce -s 16MiB -a greedy --chunks 2 --seed 6 --seeds 3 -o seeds/tie --json >seeds/tie.json &&
  [ "$(json_get seeds/tie.json seed)" = 6 ] && [ "$(json_get seeds/tie.json seeds_tried)" = 3 ] &&
  [ "$(json_get seeds/tie.json time_ns)" = "$(json_get seeds/s8.json time_ns)" ] && ok ||
  bad "$desc: a tie keeps the lowest seed: $(cat seeds/tie.json)"
"$TENET" synth -t mesh-4x4 -c allreduce -s 16MiB -a greedy --chunks 2 --seed 2 --seeds 3 -o seeds/best >seeds/out.txt &&
  grep -q "^seed 3: the fastest of the 3 seeds tried" seeds/out.txt && ok || bad "$desc: summary: $(cat seeds/out.txt)"
# Methods that take no seed run once.
"$TENET" synth -t mesh-4x4 -c allreduce -s 16MiB -a ring --seeds 5 -o seeds/ring --json >seeds/ring.json &&
  [ "$(json_get seeds/ring.json seeds_tried)" = 1 ] && ok || bad "$desc: ring ran per seed: $(cat seeds/ring.json)"
expect_fail 1 "--seeds 0" "$TENET" synth -t ring-8 -c allgather -s 1MiB -o bad/x --seeds 0
expect_fail 1 "--seeds over 1000" "$TENET" synth -t ring-8 -c allgather -s 1MiB -o bad/x --seeds 1001
expect_msg "--seeds"
"$TENET" synth --help | grep -q -- "--seeds N" && ok || bad "--help lacks --seeds"

# ---- bad input -------------------------------------------------------------------------
cat >disc.json <<'JSON'
{"name": "two-islands", "npus": 4, "switches": 0,
 "links": [{"src": 0, "dst": 1, "bandwidth": 50, "latency": 500},
           {"src": 2, "dst": 3, "bandwidth": 50, "latency": 500}]}
JSON
expect_fail 2 "disconnected fabric" "$TENET" synth -t disc.json -c allgather -s 1MiB -o bad/x
expect_msg "cannot reach"
expect_fail 1 "unknown collective" "$TENET" synth -t ring-8 -c allgaher -s 1MiB -o bad/x
# --json tells what order-proofing did: the greedy's Reduce-Scatter on torus-8x8 at 1 MiB, run
# as lowered, is slower than its plan, and is kept to the plan's order
desc="before_order_proofing_ns"
run "$TENET" synth -t torus-8x8 -c reducescatter -s 1MiB -a greedy --chunks 8 -o gate/rs --json
expect_rc 0
t_s=$(flat | sed 's/.*"time_ns":\([0-9.e+]*\).*/\1/')
t_b=$(flat | sed 's/.*"before_order_proofing_ns":\([0-9.e+]*\).*/\1/')
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if b > a * 1.01 else 1)" "$t_s" "$t_b" \
  && ok || bad "$desc: time $t_s, before order-proofing $t_b"
expect_fail 1 "unknown algorithm" "$TENET" synth -t ring-8 -c allgather -s 1MiB -a grdy -o bad/x
expect_fail 1 "bad size" "$TENET" synth -t ring-8 -c allgather -s 12XB -o bad/x
expect_fail 1 "zero size" "$TENET" synth -t ring-8 -c allgather -s 0 -o bad/x
expect_fail 1 "size overflow" "$TENET" synth -t ring-8 -c allgather -s 99999999999999999999 -o bad/x
expect_fail 1 "size below one byte per chunk" "$TENET" synth -t ring-8 -c allgather -s 4 -o bad/x
expect_fail 1 "missing topology" "$TENET" synth -t no-such-fabric -c allgather -s 1MiB -o bad/x
expect_fail 1 "missing -o" "$TENET" synth -t ring-8 -c allgather -s 1MiB
expect_fail 1 "unknown option" "$TENET" synth -t ring-8 -c allgather -s 1MiB -o bad/x --chunk 2
expect_msg "did you mean '--chunks'"
expect_fail 1 "zero chunks" "$TENET" synth -t ring-8 -c allgather -s 1MiB -o bad/x --chunks 0
expect_fail 1 "TENET_THREADS not a count" env TENET_THREADS=two "$TENET" synth -t ring-8 -c allgather -s 1MiB -o bad/x
expect_msg "TENET_THREADS='two' is not a thread count"
expect_fail 1 "TENET_THREADS out of range" env TENET_THREADS=0 "$TENET" synth -t ring-8 -c allgather -s 1MiB -o bad/x

testlib_done
