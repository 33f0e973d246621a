#!/usr/bin/env bash
# tests/cli/et.sh — `tenet et dump/dot` and `tenet verify` on a synthesized Chakra set and on
# a foreign (Python-written) one, and the synthesized set decoded by Chakra's own Python
# schema (protoc --python_out of emit/et_def.proto). Usage: et.sh TENET SCRATCH SOURCE_DIR
set -u
BIN=$1 DIR=$2 SRC=$3
rm -rf "$DIR" && mkdir -p "$DIR"
pass=0 failed=0
ok() { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
skip() { echo "SKIP: $*"; }

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

json_get() { # json_get FILE EXPR: prints the Python expression over the parsed object j
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"
}

expect 0 "tenet et dump PREFIX" "et --help" -- "$BIN" et --help
expect 0 "semantics checked" "verify --help" -- "$BIN" verify --help
expect 1 "none.0.et" "dump of a missing set" -- "$BIN" et dump "$DIR/none"
expect 1 "unknown subcommand 'frob'" "unknown et subcommand" -- "$BIN" et frob x
expect 1 "needs --rank" "dot without --rank" -- "$BIN" et dot "$DIR/none"
expect 1 "required" "verify without arguments" -- "$BIN" verify

PY=/usr/bin/python3
HAVE_PB=0
if "$PY" -c 'import google.protobuf' 2>/dev/null && command -v protoc >/dev/null; then
  mkdir -p "$DIR/gen"
  if protoc --python_out="$DIR/gen" --proto_path="$SRC/emit" "$SRC/emit/et_def.proto"; then
    HAVE_PB=1
  else
    bad "protoc --python_out failed on emit/et_def.proto"
  fi
else
  skip "Chakra Python schema checks: needs $PY with google.protobuf and protoc"
fi

# ---- a synthesized set -------------------------------------------------------------
synth_out=$("$BIN" synth -t ring-8 -c allgather -s 8MiB -a ring -o "$DIR/ag" 2>&1)
synth_rc=$?
if [ $synth_rc -ne 0 ]; then
  bad "tenet synth -a ring: exit $synth_rc: $synth_out"
else
  ok
  n=0
  for r in 0 1 2 3 4 5 6 7; do [ -s "$DIR/ag.$r.et" ] && n=$((n + 1)); done
  [ $n -eq 8 ] && ok || bad "synth wrote $n of 8 rank files"
  [ ! -e "$DIR/ag.8.et" ] && ok || bad "synth wrote a ninth file"

  if "$BIN" et dump "$DIR/ag" >"$DIR/ag.stdout.json" 2>"$DIR/err"; then
    got=$(json_get "$DIR/ag.stdout.json" '"%s %d %s %d %d %d" % (j["producer"], j["npus"], j["collective"], j["size_bytes"], j["nodes"], j["messages"])')
    [ "$got" = "ring 8 allgather 8388608 112 56" ] && ok || bad "et dump header: $got"
    got=$(json_get "$DIR/ag.stdout.json" '" ".join(sorted(set(n["type"] for r in j["ranks"] for n in r["nodes"])))')
    [ "$got" = "RECV SEND" ] && ok || bad "et dump node types: $got"
  else
    bad "et dump: $(cat "$DIR/err")"
  fi
  expect 0 "" "et dump -o" -- "$BIN" et dump "$DIR/ag" -o "$DIR/out/ag.json"
  cmp -s "$DIR/ag.stdout.json" "$DIR/out/ag.json" && ok || bad "et dump -o differs from stdout"
  ls "$DIR/out" | grep -q tmp && bad "et dump -o left a temporary file" || ok
  expect 0 "digraph \"rank3\"" "et dot" -- "$BIN" et dot "$DIR/ag" --rank 3
  expect 0 "" "et dot -o" -- "$BIN" et dot "$DIR/ag" -r 3 -o "$DIR/ag3.dot"
  grep -q -- "-> n" "$DIR/ag3.dot" && ok || bad "et dot has no edge"
  expect 1 "rank 8 is out of range" "et dot of a rank past the set" -- "$BIN" et dot "$DIR/ag" --rank 8

  expect 0 "verified: 112 nodes, 56 messages, semantics checked" "verify the ring set" -- \
    "$BIN" verify -t ring-8 -c allgather -s 8MiB "$DIR/ag"
  expect 1 "not allreduce of 8MiB" "verify with the wrong collective" -- \
    "$BIN" verify -t ring-8 -c allreduce -s 8MiB "$DIR/ag"
  expect 1 "not allgather of 4MiB" "verify with the wrong size" -- \
    "$BIN" verify -t ring-8 -c allgather -s 4MiB "$DIR/ag"
  expect 1 "ag.4.et: exists" "verify against a smaller fabric" -- \
    "$BIN" verify -t ring-4 -c allgather -s 8MiB "$DIR/ag"
  mkdir -p "$DIR/miss" && cp "$DIR"/ag.*.et "$DIR/miss/" && rm "$DIR/miss/ag.5.et"
  expect 1 "ag.5.et" "verify with a rank file missing" -- \
    "$BIN" verify -t ring-8 -c allgather -s 8MiB "$DIR/miss/ag"
  mkdir -p "$DIR/gz" && cp "$DIR"/ag.*.et "$DIR/gz/" && gzip -n "$DIR/gz/ag.2.et" &&
    mv "$DIR/gz/ag.2.et.gz" "$DIR/gz/ag.2.et"
  "$BIN" et dump "$DIR/gz/ag" >"$DIR/gz.json" 2>&1 && cmp -s "$DIR/gz.json" "$DIR/ag.stdout.json" &&
    ok || bad "a gzipped rank file does not read the same"
  mkdir -p "$DIR/cut" && cp "$DIR"/ag.*.et "$DIR/cut/" && truncate -s -3 "$DIR/cut/ag.4.et"
  expect 1 "ag.4.et: byte" "verify a truncated file" -- \
    "$BIN" verify -t ring-8 -c allgather -s 8MiB "$DIR/cut/ag"

  if [ $HAVE_PB -eq 1 ]; then
    expect 0 "decoded 8 files: 112 nodes, 56 SEND, 56 RECV, 0 COMP" "Chakra Python decode" -- \
      "$PY" "$SRC/tests/cli/chakra_decode.py" "$DIR/gen" "$DIR/ag"
    # One file of the set broken three ways, each caught by the verifier with rank and node.
    for m in "size:SEND of 1048577 B" "drop:has no matching SEND on rank 3" \
      "cycle:dependency cycle"; do
      mode=${m%%:*} needle=${m#*:}
      mkdir -p "$DIR/$mode" && cp "$DIR"/ag.*.et "$DIR/$mode/"
      if "$PY" "$SRC/tests/cli/chakra_mutate.py" "$DIR/gen" "$DIR/$mode/ag.3.et" "$mode"; then
        expect 1 "$needle" "verify a set with a $mode mutation" -- \
          "$BIN" verify -t ring-8 -c allgather -s 8MiB "$DIR/$mode/ag"
      else
        bad "chakra_mutate.py $mode failed"
      fi
    done
  fi
fi

# ---- a foreign set: no tenet attributes, ids not dense, ctrl_deps -------------------
if [ $HAVE_PB -eq 1 ]; then
  "$PY" - "$DIR/gen" "$DIR/foreign" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import et_def_pb2 as pb
def rec(m):
    b = m.SerializeToString(); n = len(b); out = bytearray()
    while True:
        lo = n & 0x7f; n >>= 7
        out.append(lo | (0x80 if n else 0))
        if not n:
            return bytes(out) + b
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
  expect 0 "\"collective\": null" "et dump of a foreign set" -- "$BIN" et dump "$DIR/foreign"
  expect 0 "verified: 24 nodes, 12 messages, semantics not checked" "verify a foreign set" -- \
    "$BIN" verify -t ring-4 -c allgather -s 4MiB "$DIR/foreign"
else
  skip "foreign-set checks: need $PY with google.protobuf and protoc"
fi

echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
