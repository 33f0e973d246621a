#!/usr/bin/env bash
# tests/cli/topo.sh — `tenet topo gen|info|list|draw` on the built binary: the contract of
# docs/architecture.md §6 (keys of --json, exit codes, one-line errors, no partial files).
# Usage: bash topo.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" topo

# expect_bad DESC FILE_THAT_MUST_NOT_EXIST CMD...: expect_fail with exit 1, and FILE (when
# given) not written.
expect_bad() {
  local d=$1 f=$2
  shift 2
  expect_fail 1 "$d" "$@"
  if [ -n "$f" ] && [ -e "$f" ]; then bad "$d: wrote $f"; fi
}

# ---- help and version --------------------------------------------------------------
desc="help"
run "$TENET" --help
[ "$rc" -eq 0 ] && grep -q 'topo' out.txt && ok || bad "tenet --help lists topo"
for sub in "" gen info list draw; do
  run "$TENET" topo $sub --help
  [ "$rc" -eq 0 ] && grep -q 'usage: tenet topo' out.txt && ok || bad "topo $sub --help"
done
run "$TENET" --version
[ "$rc" -eq 0 ] && grep -q '^tenet [0-9]' out.txt && ok || bad "--version"

# ---- gen ---------------------------------------------------------------------------
desc="gen mesh"
run "$TENET" topo gen mesh 8x8 -o m.json
[ "$rc" -eq 0 ] && [ -s m.json ] && ok || bad "gen mesh 8x8: exit $rc $(cat err.txt)"
run "$TENET" topo gen mesh 8x8 -o m2.json
cmp -s m.json m2.json && ok || bad "gen is not deterministic"
run "$TENET" topo gen mesh 8x8 --explicit -o e.json
grep -q '"links"' e.json && ok || bad "gen --explicit writes links"
# Both forms load back to the same fabric.
run "$TENET" topo info m.json --json
cp out.txt info-gen.txt
run "$TENET" topo info e.json --json
cmp -s out.txt info-gen.txt && ok || bad "generator and explicit forms differ in info"
desc="gen info"
run "$TENET" topo info m.json --json
expect_key npus 64
expect_key links 224
expect_key diameter 14
run "$TENET" topo gen torus 4x4 --bandwidth 100 --latency 250 -o t.json
grep -q '"bandwidth": 100' t.json && grep -q '"latency": 250' t.json && ok || bad "gen flags"
desc="gen ring unidirectional"
run "$TENET" topo gen ring 8 --unidirectional -o r.json
run "$TENET" topo info r.json --json
expect_key links 8
expect_key diameter 7
run "$TENET" topo gen hypercube 64 --name hc --description "a cube" -o hc.json
run "$TENET" topo info hc.json --json
desc="gen hypercube"
expect_key name '"hc"'
expect_key diameter 6
expect_key min_in_degree 6

expect_bad "gen unknown kind" x.json "$TENET" topo gen tours 8x8 -o x.json
desc="gen unknown kind"; expect_msg "unknown KIND 'tours'"
expect_bad "gen bad dims" x.json "$TENET" topo gen mesh 8xx8 -o x.json
expect_bad "gen mesh needs 2-3 dims" x.json "$TENET" topo gen mesh 8 -o x.json
expect_bad "gen hypercube not a power of two" x.json "$TENET" topo gen hypercube 12 -o x.json
expect_bad "gen zero bandwidth" x.json "$TENET" topo gen ring 8 --bandwidth 0 -o x.json
expect_bad "gen bandwidth not a number" x.json "$TENET" topo gen ring 8 --bandwidth fast -o x.json
expect_bad "gen negative latency" x.json "$TENET" topo gen ring 8 --latency -5 -o x.json
expect_bad "gen unidirectional mesh" x.json "$TENET" topo gen mesh 4x4 --unidirectional -o x.json
expect_bad "gen without -o" "" "$TENET" topo gen mesh 4x4
expect_bad "gen misspelt option" x.json "$TENET" topo gen mesh 4x4 --bandwith 5 -o x.json
desc="gen misspelt option"; expect_msg "did you mean '--bandwidth'"
expect_bad "gen absurd size" x.json "$TENET" topo gen fc 60000 -o x.json
# Every oversize or malformed shape: one line naming the rule, exit 1, no file; the same
# rule for KIND DIMS and for KIND-DIMS names (a hypercube of 512 once overflowed a stack
# array of 8 sizes).
while IFS='|' read -r kind dims msg; do
  expect_bad "gen $kind $dims" x.json "$TENET" topo gen "$kind" "$dims" -o x.json
  desc="gen $kind $dims"; expect_msg "$msg"
  expect_fail 1 "info $kind-$dims" "$TENET" topo info "$kind-$dims"
  desc="info $kind-$dims"; expect_msg "$msg"
done <<'SHAPES'
hypercube|512|a hypercube has at most 2^8 = 256 NPUs, not 512
hypercube|1024|a hypercube has at most 2^8 = 256 NPUs, not 1024
hypercube|4096|a hypercube has at most 2^8 = 256 NPUs, not 4096
hypercube|65536|a hypercube has at most 2^8 = 256 NPUs, not 65536
hypercube|131072|the fabric would have more NPUs than the cap of 65536 (TOPO_MAX_NPUS)
hypercube|1|a hypercube's NPU count must be a power of two >= 2, not 1
mesh|2x2x2x2x2x2x2x2x2|has more than 8 dimensions
torus|2x2x2x2|a torus takes 2 or 3 dimensions (like 8x8), not 4
ring|0|every size must be >= 2, not 0
switch|1|every size must be >= 2, not 1
mesh|4x1x4|every size must be >= 2, not 1
mesh|300x300|the fabric would have 90000 NPUs, more than the cap of 65536 (TOPO_MAX_NPUS)
torus|65536x65536x65536|the fabric would have 281474976710656 NPUs, more than the cap
ring|99999999999999999999999|the fabric would have more NPUs than the cap of 65536
fc|60000|the fabric would have 3599940000 links, more than the cap of 4194304 (TOPO_MAX_LINKS)
SHAPES
expect_bad "gen into a missing folder" no/such/x.json "$TENET" topo gen ring 4 -o no/such/x.json
expect_bad "unknown topo subcommand" "" "$TENET" topo inf m.json
desc="unknown topo subcommand"; expect_msg "did you mean 'info'"

# ---- info on shipped names -------------------------------------------------------------
desc="info mesh-8x8"
run "$TENET" topo info mesh-8x8 --json
[ "$rc" -eq 0 ] && ok || bad "info mesh-8x8: exit $rc"
expect_key npus 64
expect_key switches 0
expect_key diameter 14
expect_key min_in_degree 2
expect_key max_in_degree 4
expect_key connected true
expect_key min_ingress_GBps 100
expect_key max_ingress_GBps 200
[ "$(flat | grep -o '^{.*}$' | wc -l)" -eq 1 ] && ok || bad "info --json prints one object"
desc="info terminal"
run "$TENET" topo info hierarchical-16x8
[ "$rc" -eq 0 ] && grep -q '^NPUs  *128$' out.txt && grep -q '^switches  *24$' out.txt &&
  grep -q '^diameter  *4 hops' out.txt && ok || bad "info terminal summary: $(cat out.txt)"
expect_bad "info unknown shipped name" "" "$TENET" topo info meshh-8x8
desc="info unknown shipped name"; expect_msg "did you mean 'mesh-8x8'"
expect_msg "tenet topo list"

# ---- bad topology files ------------------------------------------------------------------
bad_file() { # NAME CONTENT FRAGMENT
  printf '%s' "$2" >"$1"
  expect_bad "info $1" "" "$TENET" topo info "$1" --json
  desc="info $1"
  expect_msg "$1"
  expect_msg "$3"
  rm -f "$1"
}
L='"bandwidth": 50, "latency": 500'
bad_file malformed.json $'{\n  "npus": 4,\n  "links": [,]\n}' "malformed.json:3:"
bad_file truncated.json '{"npus": 4, "links": [' "unexpected end of input"
bad_file empty.json '' "empty file"
bad_file deep.json "$(printf '[%.0s' $(seq 1 1200))" "JSON nested deeper than 1000 levels"
bad_file wrongtype.json '{"npus": "4", "links": []}' "npus must be a number"
bad_file unknownkey.json '{"kind": "mesh", "dims": [4, 4], "bandwith": 5, "latency": 1}' \
  "did you mean 'bandwidth'"
bad_file missing.json '{"npus": 2, "links": [{"src": 0, "dst": 1, "bandwidth": 5}]}' \
  "links[0]: missing key 'latency'"
bad_file zerobw.json '{"npus": 2, "links": [{"src": 0, "dst": 1, "bandwidth": 0, "latency": 1}]}' \
  "links[0].bandwidth must be > 0"
bad_file infbw.json '{"npus": 2, "links": [{"src": 0, "dst": 1, "bandwidth": 1e999, "latency": 1}]}' \
  "links[0].bandwidth must be a finite number"
bad_file neglat.json '{"npus": 2, "links": [{"src": 0, "dst": 1, "bandwidth": 5, "latency": -1}]}' \
  "links[0].latency must be >= 0"
bad_file selfloop.json "{\"npus\": 2, \"links\": [{\"src\": 1, \"dst\": 1, $L}]}" "links[0] is a self-loop"
bad_file range.json "{\"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 5, $L}]}" "links[0].dst = 5 is out of range"
bad_file dup.json "{\"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 1, $L}, {\"src\": 1, \"dst\": 0, $L}]}" \
  "links[1] duplicates links[0]"
bad_file zero.json '{"npus": 0, "links": []}' "npus must be at least 1"
bad_file absurd.json '{"npus": 1000000000, "links": []}' "exceeds the cap"
bad_file absurdgen.json '{"kind": "torus", "dims": [50000, 50000], "bandwidth": 5, "latency": 1}' "cap"
bad_file badkind.yml $'topology: [ Ring, Swich ]\nnpus_count: [ 8, 4 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\n' \
  "badkind.yml:1:19: topology[1]: unknown kind 'Swich' (did you mean 'Switch'?)"
expect_bad "info missing file" "" "$TENET" topo info ./nothing/here.json
desc="info missing file"; expect_msg "nothing/here.json"

# ---- YAML import and a disconnected fabric -----------------------------------------------
printf 'topology: [ Ring, Switch ]\nnpus_count: [ 8, 16 ]\nbandwidth: [ 50, 25 ]\nlatency: [ 500, 1000 ]\n' >net.yml
desc="info yaml"
run "$TENET" topo info net.yml --json
expect_key npus 128
expect_key switches 8
expect_key connected true
printf '{"name": "islands", "npus": 4, "links": [{"src": 0, "dst": 1, %s}, {"src": 2, "dst": 3, %s}]}' \
  "$L" "$L" >islands.json
desc="info disconnected"
run "$TENET" topo info islands.json --json
[ "$rc" -eq 0 ] && ok || bad "info on a disconnected fabric exits $rc"
expect_key connected false
expect_key diameter null
run "$TENET" topo info islands.json
grep -q '^connected  *no' out.txt && ok || bad "terminal info says connected no"

# ---- list ----------------------------------------------------------------------------------
desc="list"
run "$TENET" topo list
[ "$rc" -eq 0 ] && grep -q '^mesh-8x8 .* 64  2D mesh' out.txt && grep -q '^hierarchical-16x8 ' out.txt &&
  ok || bad "list: $(head -3 out.txt)"
[ "$(grep -c . out.txt)" -ge 21 ] && ok || bad "list has the shipped fabrics"
run "$TENET" topo list --json
flat | grep -q '"topologies":\[{' && ok || bad "list --json"

# ---- draw ----------------------------------------------------------------------------------
# graphviz and fontconfig leak their global caches at exit: not ours (see the file).
export LSAN_OPTIONS="suppressions=$SRC/tests/cli/topo.lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
desc="draw"
run "$TENET" topo draw ring-4 -o ring.svg
[ "$rc" -eq 0 ] && head -c 100 ring.svg | grep -q '<?xml' && ok || bad "draw svg: $(cat err.txt)"
# A bidirectional pair is drawn once: 4 edges for a ring of 4.
[ "$(grep -c 'class="edge"' ring.svg)" -eq 4 ] && ok || bad "draw ring-4 has 4 edges"
grep -q '>50<' ring.svg && ok || bad "edges are labelled by bandwidth"
run "$TENET" topo draw hetero-ring-6 -o het.svg --layout dot
# 6 pairs, of which 5 -> 0 and 0 -> 5 differ: 7 edges.
[ "$rc" -eq 0 ] && [ "$(grep -c 'class="edge"' het.svg)" -eq 7 ] && ok || bad "draw hetero ring"
run "$TENET" topo draw switch-8 -o sw.png
[ "$rc" -eq 0 ] && head -c 4 sw.png | grep -q 'PNG' && ok || bad "draw png: $(cat err.txt)"
expect_bad "draw bad extension" pic.gif "$TENET" topo draw ring-4 -o pic.gif
expect_bad "draw bad layout" pic.svg "$TENET" topo draw ring-4 -o pic.svg --layout circo
expect_bad "draw missing topology" pic.svg "$TENET" topo draw nothing.json -o pic.svg
# A fabric too large to lay out in a few seconds is refused before graphviz sees it, for
# each engine, with its figures and the limit (ring-65536 once crashed neato; fc-32 took
# dot 20 s, mesh-128x128 minutes).
expect_bad "draw huge ring neato" pic.svg "$TENET" topo draw ring-65536 -o pic.svg
desc="draw huge ring neato"; expect_msg "65536 nodes and 131072 links are too many to lay out with neato"
expect_msg "at most 1024 nodes, 10240 links"
expect_bad "draw huge mesh dot" pic.svg "$TENET" topo draw mesh-128x128 -o pic.svg --layout dot
desc="draw huge mesh dot"; expect_msg "16384 nodes and 65024 links are too many to lay out with dot"
expect_bad "draw dense fc dot" pic.svg "$TENET" topo draw fc-32 -o pic.svg --layout dot
desc="draw dense fc dot"; expect_msg "32 nodes and 992 links"; expect_msg "16 links per node"
expect_msg "--layout neato takes it"
expect_bad "draw dense fc neato" pic.svg "$TENET" topo draw fc-128 -o pic.svg
desc="draw dense fc neato"; expect_msg "128 nodes and 16256 links"
# A switch fabric is drawn in tiers by default: NPUs in the bottom row, each server's
# NVSwitch (200 GB/s) above its NPUs, the rail switches (25 GB/s) on top; links coloured
# by bandwidth, named in the title, instead of 32 labels.
run "$TENET" topo draw hierarchical-4x4 -o tiers.svg
[ "$rc" -eq 0 ] && python3 - tiers.svg <<'EOF' && ok || bad "draw switch fabric in tiers: $(cat err.txt)"
import re, sys
svg = open(sys.argv[1]).read()
y = {}
for title, body in re.findall(r'<g id="node\d+" class="node">\s*<title>(n\d+)</title>(.*?)</g>', svg, re.S):
    m = re.search(r'cy="(-?[\d.]+)"', body) or re.search(r'points="[-\d.]+,(-?[\d.]+)', body)
    y[int(title[1:])] = float(m.group(1))
npus, servers, rails = [y[v] for v in range(16)], [y[v] for v in range(16, 20)], [y[v] for v in range(20, 24)]
assert min(npus) > max(servers) and min(servers) > max(rails), (npus, servers, rails)
assert len(set(npus)) == 1 and len(set(servers)) == 1 and len(set(rails)) == 1
assert "links in GB/s: 25 blue, 200 darkorange" in svg
assert 'class="edge"' in svg and not re.search(r'<text[^>]*>200</text>', svg)
EOF
run "$TENET" topo draw hierarchical-4x4 -o flat.svg --layout neato
[ "$rc" -eq 0 ] && grep -q '>200</text>' flat.svg && ok || bad "draw --layout neato keeps labels"
"$TENET" topo draw --help | grep -q -- "--layout auto|neato|dot" && ok || bad "draw --help names auto"

# topo info prints the tight bounds: mesh-8x8 All-Reduce of 1 GiB is 2*63 crossings of every
# byte over 224 links of 50 GB/s = 11.25 ms (plus the last hop's 500 ns).
run "$TENET" topo info mesh-8x8 --json
[ "$rc" -eq 0 ] && python3 - out.txt <<'EOF' && ok || bad "info --json bounds"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("npus", "switches", "links", "diameter", "connected", "latency_bound_ns", "bounds_tight"):
    assert k in d, k
assert d["latency_bound_ns"] == 7000 and d["bounds_tight"] is True
b = d["bounds"]
assert abs(b["allreduce"]["time_1GiB_ns"] - 11250500) < 1, b["allreduce"]
assert abs(b["allgather"]["busbw_ceiling_GBps"] - 100) < 0.01, b["allgather"]
for c in ("allgather", "reducescatter", "allreduce"):
    assert set(b[c]) == {"time_1GiB_ns", "busbw_ceiling_GBps", "ps_per_byte", "why"}, b[c]
EOF
run "$TENET" topo info hierarchical-16x8
[ "$rc" -eq 0 ] && grep -qE '^  allgather +4\.69 ms .*120 NPUs' out.txt && ok || bad "info text bounds"

# One rule for a hypercube's size, whichever way it is asked for (it once overflowed a
# stack array at 512); and KIND-DIMS names work in every command.
for n in 512 1024 4096 65536; do
  expect_fail 1 "topo gen hypercube $n" "$TENET" topo gen hypercube $n -o cube.json
  expect_msg "at most 2^8 = 256 NPUs, not $n"
  "$TENET" synth -t hypercube-$n -c allgather -s 1MiB -o cube/x 2>err.txt >/dev/null
  [ $? -eq 1 ] && [ ! -e cube ] && grep -qF "tenet synth: a hypercube has at most 2^8 = 256 NPUs" err.txt &&
    ok || bad "synth hypercube-$n: $(cat err.txt)"
done
printf '{"name": "c", "kind": "hypercube", "dims": [512]}' >cube512.json
expect_fail 1 "json hypercube 512" "$TENET" topo info cube512.json
expect_msg "dims[0]: a hypercube has at most 2^8"
rm -f cube512.json
run "$TENET" topo info torus-4x4x2
[ "$rc" -eq 0 ] && grep -q '^NPUs  *32$' out.txt && ok || bad "topo info KIND-DIMS: $(cat out.txt)"

testlib_done
