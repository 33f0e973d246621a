#!/usr/bin/env bash
# tests/cli/et.sh — `tenet et dump/dot` and `tenet verify` on a synthesized Chakra set and on
# a foreign (Python-written) one, and the synthesized set decoded by Chakra's own Python
# schema (protoc --python_out of emit/chakra/et_def.proto). Usage: et.sh TENET SCRATCH SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" et

# expect CODE NEEDLE DESC -- CMD...: runs CMD, checks its exit code and that stdout+stderr
# contains NEEDLE (empty NEEDLE: anything).
expect() {
  local code=$1 needle=$2 desc=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$desc: exit $rc, wanted $code: $out"; return; fi
  if [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; then
    bad "$desc: output lacks '$needle': $out"; return
  fi
  ok
}

json_eval() { # json_eval FILE EXPR: prints the Python expression over the parsed object j
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"
}

expect 0 "tenet et dump PREFIX" "et --help" -- "$TENET" et --help
expect 0 "semantics checked" "verify --help" -- "$TENET" verify --help
expect 1 "none.0.et" "dump of a missing set" -- "$TENET" et dump "$SCRATCH/none"
expect 1 "unknown subcommand 'frob'" "unknown et subcommand" -- "$TENET" et frob x
expect 1 "needs --rank" "dot without --rank" -- "$TENET" et dot "$SCRATCH/none"
expect 1 "required" "verify without arguments" -- "$TENET" verify

PY=/usr/bin/python3
HAVE_PB=0
if "$PY" -c 'import google.protobuf' 2>/dev/null && command -v protoc >/dev/null; then
  mkdir -p "$SCRATCH/gen"
  if protoc --python_out="$SCRATCH/gen" --proto_path="$SRC/emit/chakra" "$SRC/emit/chakra/et_def.proto"; then
    HAVE_PB=1
  else
    bad "protoc --python_out failed on emit/chakra/et_def.proto"
  fi
else
  bad "Chakra Python schema checks need $PY with google.protobuf and protoc (scripts/install-deps.sh installs them)"
fi

# ---- a synthesized set -------------------------------------------------------------
synth_out=$("$TENET" synth -t ring-8 -c allgather -s 8MiB -a ring --chunks 1 -o "$SCRATCH/ag" 2>&1)
synth_rc=$?
if [ $synth_rc -ne 0 ]; then
  bad "tenet synth -a ring: exit $synth_rc: $synth_out"
else
  ok
  n=0
  for r in 0 1 2 3 4 5 6 7; do [ -s "$SCRATCH/ag.$r.et" ] && n=$((n + 1)); done
  [ $n -eq 8 ] && ok || bad "synth wrote $n of 8 rank files"
  [ ! -e "$SCRATCH/ag.8.et" ] && ok || bad "synth wrote a ninth file"

  if "$TENET" et dump "$SCRATCH/ag" >"$SCRATCH/ag.stdout.json" 2>"$SCRATCH/err"; then
    got=$(json_eval "$SCRATCH/ag.stdout.json" '"%s %d %s %d %d %d" % (j["producer"], j["npus"], j["collective"], j["size_bytes"], j["nodes"], j["messages"])')
    [ "$got" = "ring 8 allgather 8388608 112 56" ] && ok || bad "et dump header: $got"
    got=$(json_eval "$SCRATCH/ag.stdout.json" '" ".join(sorted(set(n["type"] for r in j["ranks"] for n in r["nodes"])))')
    [ "$got" = "RECV SEND" ] && ok || bad "et dump node types: $got"
  else
    bad "et dump: $(cat "$SCRATCH/err")"
  fi
  expect 0 "" "et dump -o" -- "$TENET" et dump "$SCRATCH/ag" -o "$SCRATCH/out/ag.json"
  cmp -s "$SCRATCH/ag.stdout.json" "$SCRATCH/out/ag.json" && ok || bad "et dump -o differs from stdout"
  ls "$SCRATCH/out" | grep -q tmp && bad "et dump -o left a temporary file" || ok
  expect 0 "digraph \"rank3\"" "et dot" -- "$TENET" et dot "$SCRATCH/ag" --rank 3
  expect 0 "" "et dot -o" -- "$TENET" et dot "$SCRATCH/ag" -r 3 -o "$SCRATCH/ag3.dot"
  grep -q -- "-> n" "$SCRATCH/ag3.dot" && ok || bad "et dot has no edge"
  expect 1 "rank 8 is out of range" "et dot of a rank past the set" -- "$TENET" et dot "$SCRATCH/ag" --rank 8

  expect 0 "verified: 112 nodes, 56 messages, semantics checked" "verify the ring set" -- \
    "$TENET" verify -t ring-8 -c allgather -s 8MiB "$SCRATCH/ag"
  expect 1 "not allreduce of 8MiB" "verify with the wrong collective" -- \
    "$TENET" verify -t ring-8 -c allreduce -s 8MiB "$SCRATCH/ag"
  expect 1 "not allgather of 4MiB" "verify with the wrong size" -- \
    "$TENET" verify -t ring-8 -c allgather -s 4MiB "$SCRATCH/ag"
  expect 1 "but the fabric 'ring-4' has 4 NPUs" "verify against a smaller fabric" -- \
    "$TENET" verify -t ring-4 -c allgather -s 8MiB "$SCRATCH/ag"
  mkdir -p "$SCRATCH/miss" && cp "$SCRATCH"/ag.*.et "$SCRATCH/miss/" && rm "$SCRATCH/miss/ag.5.et"
  expect 1 "ag.5.et" "verify with a rank file missing" -- \
    "$TENET" verify -t ring-8 -c allgather -s 8MiB "$SCRATCH/miss/ag"
  mkdir -p "$SCRATCH/gz" && cp "$SCRATCH"/ag.*.et "$SCRATCH/gz/" && gzip -n "$SCRATCH/gz/ag.2.et" &&
    mv "$SCRATCH/gz/ag.2.et.gz" "$SCRATCH/gz/ag.2.et"
  "$TENET" et dump "$SCRATCH/gz/ag" >"$SCRATCH/gz.json" 2>&1 && cmp -s "$SCRATCH/gz.json" "$SCRATCH/ag.stdout.json" &&
    ok || bad "a gzipped rank file does not read the same"
  mkdir -p "$SCRATCH/cut" && cp "$SCRATCH"/ag.*.et "$SCRATCH/cut/" && truncate -s -3 "$SCRATCH/cut/ag.4.et"
  expect 1 "ag.4.et: byte" "verify a truncated file" -- \
    "$TENET" verify -t ring-8 -c allgather -s 8MiB "$SCRATCH/cut/ag"

  if [ $HAVE_PB -eq 1 ]; then
    expect 0 "decoded 8 files: 112 nodes, 56 SEND, 56 RECV, 0 COMP" "Chakra Python decode" -- \
      "$PY" "$SRC/tests/cli/chakra_decode.py" "$SCRATCH/gen" "$SCRATCH/ag"
    # One file of the set broken three ways, each caught by the verifier with rank and node.
    for m in "size:SEND of 1048577 B" "drop:has no matching SEND on rank 3" \
      "cycle:dependency cycle"; do
      mode=${m%%:*} needle=${m#*:}
      mkdir -p "$SCRATCH/$mode" && cp "$SCRATCH"/ag.*.et "$SCRATCH/$mode/"
      if "$PY" "$SRC/tests/cli/chakra_mutate.py" "$SCRATCH/gen" "$SCRATCH/$mode/ag.3.et" "$mode"; then
        expect 1 "$needle" "verify a set with a $mode mutation" -- \
          "$TENET" verify -t ring-8 -c allgather -s 8MiB "$SCRATCH/$mode/ag"
      else
        bad "chakra_mutate.py $mode failed"
      fi
    done
  fi
fi

# ---- a foreign set: no tenet attributes, ids not dense, ctrl_deps -------------------
if [ $HAVE_PB -eq 1 ]; then
  "$PY" - "$SCRATCH/gen" "$SCRATCH/foreign" "$SRC/tests/cli/lib" <<'EOF'
import sys
sys.dont_write_bytecode = True
sys.path[:0] = [sys.argv[1], sys.argv[3]]
import et_def_pb2 as pb
from chakra_frames import frame
def rec(m):
    return frame(m.SerializeToString())
def at(name, **kw):
    return pb.AttributeProto(name=name, **kw)
N = 4  # unidirectional ring All-Gather, 1 MiB shards, ids 10, 20, 30, ...
for r in range(N):
    out = rec(pb.GlobalMetadata(version="0.0.4"))
    prev = None
    for s in range(N - 1):
        for kind, ty in (("send", 5), ("recv", 6)):
            n = pb.Node(id=10 * (2 * s + (ty == 6) + 1), name="%s %d" % (kind, s), type=ty)
            peer = (r + 1) % N if ty == 5 else (r - 1) % N
            n.attr.extend([at("comm_src", int32_val=r if ty == 5 else peer),
                           at("comm_dst", int32_val=peer if ty == 5 else r),
                           at("comm_size", int64_val=1 << 20), at("comm_tag", int32_val=s),
                           at("comm_type", int64_val=ty), at("is_cpu_op", bool_val=False)])
            if ty == 5 and prev is not None:
                n.ctrl_deps.append(prev)
            if ty == 6:
                prev = n.id
            out += rec(n)
    open("%s.%d.et" % (sys.argv[2], r), "wb").write(out)
EOF
  expect 0 "\"collective\": null" "et dump of a foreign set" -- "$TENET" et dump "$SCRATCH/foreign"
  expect 0 "verified: 24 nodes, 12 messages, semantics not checked" "verify a foreign set" -- \
    "$TENET" verify -t ring-4 -c allgather -s 4MiB "$SCRATCH/foreign"
else
  bad "foreign-set checks need $PY with google.protobuf and protoc (scripts/install-deps.sh installs them)"
fi

# et dot renders .svg and .png through the graphviz library: no `dot` program on the PATH
# (PATH emptied); any other name (and stdout) keeps getting DOT text; a rank too large for
# the dot engine in a few seconds is refused with its figures and the way to get its DOT.
# graphviz's global caches under LeakSanitizer, as for topo draw.
export LSAN_OPTIONS="suppressions=$SRC/tests/cli/topo.lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
"$TENET" synth -t ring-4 -c allgather -s 1MiB -a greedy -o "$SCRATCH/draw/r" >/dev/null ||
  bad "synth for et dot"
expect 0 "" "et dot -o .svg without a dot program" -- env PATH=/nonexistent "$TENET" et dot "$SCRATCH/draw/r" --rank 1 -o "$SCRATCH/draw/pic/r1.svg"
grep -q "<svg" "$SCRATCH/draw/pic/r1.svg" && grep -q "Generated by graphviz" "$SCRATCH/draw/pic/r1.svg" && ok ||
  bad "et dot -o .svg is not an SVG picture"
expect 0 "" "et dot -o .png" -- env PATH=/nonexistent "$TENET" et dot "$SCRATCH/draw/r" --rank 2 -o "$SCRATCH/draw/r2.png"
is_png "$SCRATCH/draw/r2.png" && ok || bad "et dot -o .png is not a PNG"
expect 0 "" "et dot -o .dot" -- "$TENET" et dot "$SCRATCH/draw/r" --rank 1 -o "$SCRATCH/draw/r1.dot"
head -1 "$SCRATCH/draw/r1.dot" | grep -q '^digraph "rank1"' && ok || bad "et dot -o .dot is not DOT text"
expect 1 "--rank 4: the set has 4 ranks" "et dot -o .svg past the ranks" -- "$TENET" et dot "$SCRATCH/draw/r" --rank 4 -o "$SCRATCH/draw/r4.svg"
[ ! -e "$SCRATCH/draw/r4.svg" ] && ok || bad "a refused picture left a file"
"$TENET" synth -t mesh-4x4 -c allreduce -s 64MiB -a greedy --chunks 64 -o "$SCRATCH/draw/big" >/dev/null ||
  bad "synth for a large rank"
expect 1 "too many to lay out in a few seconds" "et dot of a rank too large to render" -- \
  "$TENET" et dot "$SCRATCH/draw/big" --rank 0 -o "$SCRATCH/draw/big.svg"

testlib_done
