#!/usr/bin/env bash
# tests/cli/output.sh — where outputs go and what reaches the user: -o writes through links
# and into devices and FIFOs, refuses folders; a full or closed standard output is exit 1
# with the reason; errors are one line whatever their length; JSON is valid UTF-8 with
# exact integers. Usage: bash output.sh TENET SCRATCH SOURCE
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" output

# one_line_error CODE FRAGMENT: the last run exited CODE with one line on stderr holding
# FRAGMENT.
one_line_error() {
  expect_rc "$1"
  if [ "$(wc -l <err.txt)" -eq 1 ]; then ok; else bad "$desc: stderr is not one line: $(head -c 300 err.txt)"; fi
  expect_msg "$2"
}

# ---- -o into a device: it stays a device, a full one is an error ----------------------
desc="topo gen -o /dev/full"
run "$TENET" topo gen ring 4 -o /dev/full
one_line_error 1 "/dev/full: write failed: No space left on device"
[ -c /dev/full ] && ok || bad "$desc: /dev/full is no longer a character device"

desc="topo gen -o /dev/stdout through a pipe"
"$TENET" topo gen ring 4 -o /dev/stdout 2>err.txt | grep -v '^wrote ' >piped.json
json_ok piped.json && ok || bad "$desc: no JSON through the pipe ($(cat err.txt))"
[ -e /dev/stdout ] && ok || bad "$desc: /dev/stdout replaced"

desc="export -o /dev/null"
run "$TENET" synth -t ring-4 -c allgather -s 1MiB -o set/ring
expect_rc 0
run "$TENET" export msccl -t ring-4 -c allgather -s 1MiB set/ring -o /dev/null
expect_rc 0
[ -c /dev/null ] && ok || bad "$desc: /dev/null is no longer a character device"

# ---- -o into a FIFO: a reader receives the file, the FIFO stays -------------------------
desc="topo gen -o FIFO"
mkfifo fifo
cat fifo >from_fifo.json &
reader=$!
run "$TENET" topo gen ring 4 -o fifo
expect_rc 0
wait "$reader"
[ -p fifo ] && ok || bad "$desc: the FIFO was replaced by $(stat -c %F fifo)"
json_ok from_fifo.json && ok || bad "$desc: the reader got no JSON"

# ---- -o through links: the file they name is replaced, the links stay ------------------
desc="topo gen -o LINK"
mkdir -p real
echo old >real/topo.json
ln -s real/topo.json link.json
ln -s link.json link2.json
run "$TENET" topo gen ring 4 -o link2.json
expect_rc 0
[ -L link.json ] && [ -L link2.json ] && ok || bad "$desc: a link was replaced"
json_ok real/topo.json && ok || bad "$desc: the linked file was not rewritten"
[ -z "$(ls real | grep tmp)" ] && ok || bad "$desc: a temporary was left in real/"

desc="topo gen -o dangling LINK"
ln -s real/new.json dangling.json
run "$TENET" topo gen ring 4 -o dangling.json
expect_rc 0
[ -L dangling.json ] && json_ok real/new.json && ok || bad "$desc: the named file was not created"

desc="synth -o PREFIX with a linked rank file"
mkdir -p lset
ln -s ../real/r1.et lset/ag.1.et
run "$TENET" synth -t ring-4 -c allgather -s 1MiB -o lset/ag
expect_rc 0
[ -L lset/ag.1.et ] && [ -s real/r1.et ] && ok || bad "$desc: the link was replaced"
run "$TENET" verify -t ring-4 -c allgather -s 1MiB lset/ag
expect_rc 0

# ---- -o naming a folder is refused, and creates nothing ----------------------------------
mkdir -p adir
for args in "topo gen ring 4 -o adir" "topo gen ring 4 -o /" "topo gen ring 4 -o new/" \
            "synth -t ring-4 -c allgather -s 1MiB -o adir" \
            "synth -t ring-4 -c allgather -s 1MiB -o /" \
            "synth -t ring-4 -c allgather -s 1MiB -o newdir/" \
            "compare -t ring-4 -c allgather --sizes 1KiB --csv adir/" \
            "et dump set/ring -o adir"; do
  desc="$args"
  run "$TENET" $args
  one_line_error 1 "is a directory"
done
[ ! -e new ] && [ ! -e newdir ] && ok || bad "a refused folder name was created"
[ -z "$(ls -A adir)" ] && ok || bad "files were written inside adir/: $(ls -A adir)"
[ ! -e /.0.et ] && ok || bad "synth -o / wrote /.0.et"

# ---- standard output: full or closed is exit 1 with the reason --------------------------
run "$TENET" synth -t ring-4 -c allgather -s 1MiB -o set/ring
for args in "synth -t ring-4 -c allgather -s 1MiB -o set/s --json" \
            "synth -t ring-4 -c allgather -s 1MiB -o set/s" \
            "topo list" "topo list --json" "topo info mesh-2x4" "topo info mesh-2x4 --json" \
            "compare -t ring-4 -c allgather --sizes 1KiB,1MiB" \
            "compare -t ring-4 -c allgather --sizes 1KiB --json" \
            "sim -t ring-4 set/ring" "sim -t ring-4 set/ring --json"; do
  desc="$args >/dev/full"
  "$TENET" $args >/dev/full 2>err.txt
  rc=$?
  one_line_error 1 "standard output: No space left on device"
  desc="$args >&-"
  "$TENET" $args >&- 2>err.txt
  rc=$?
  one_line_error 1 "standard output: Bad file descriptor"
done
# A closed standard output does not let the output file take its place.
desc="synth --json >&- still writes a valid set"
"$TENET" synth -t ring-4 -c allgather -s 1MiB -o closed/ag --json >&- 2>err.txt
rc=$?
expect_rc 1
run "$TENET" verify -t ring-4 -c allgather -s 1MiB closed/ag
expect_rc 0

# ---- errors are one line of any length, and keep their reason ------------------------------
desc="a 5000-byte path keeps the reason"
long=$(printf 'd%.0s' $(seq 1 250))
deep="$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long"
run "$TENET" topo info "$deep/missing.json"
expect_rc 1
[ "$(wc -l <err.txt)" -eq 1 ] && ok || bad "$desc: not one line"
grep -q '\.\.\.' err.txt && ok || bad "$desc: the middle was not cut"
tail -c 60 err.txt | grep -qi 'no such\|not found\|cannot\|unknown' && ok || bad "$desc: reason lost: $(tail -c 200 err.txt)"
[ "$(wc -c <err.txt)" -le 4200 ] && ok || bad "$desc: $(wc -c <err.txt) bytes"

# ---- JSON is valid UTF-8 and integers are exact ------------------------------------------
# utf8_json FILE: FILE is JSON and strictly valid UTF-8.
utf8_json() {
  python3 -c 'import json,sys; json.loads(open(sys.argv[1],"rb").read().decode("utf-8","strict"))' "$1" 2>/dev/null
}
ff=$(printf '\377')
desc="a name with byte 0xFF is refused"
printf '{"name": "bad%sname", "npus": 2, "links": [{"src": 0, "dst": 1, "bandwidth": 50, "latency": 1}]}' "$ff" >badname.json
run "$TENET" topo info badname.json --json
one_line_error 1 "name must be UTF-8 text"
[ ! -s out.txt ] && ok || bad "$desc: printed on stdout"

desc="a \\u0000 in a name is refused, not cut"
printf '{"name": "a\\u0000b", "npus": 2, "links": [{"src": 0, "dst": 1, "bandwidth": 50, "latency": 1}]}' >nul.json
run "$TENET" topo info nul.json --json
one_line_error 1 'nul.json:1:12: \u0000'

desc="paths with byte 0xFF in --json, batch.json and summary.json"
mkdir -p "odd$ff"
printf '{"name": "fine", "npus": 4, "links": [{"src": 0, "dst": 1, "bandwidth": 50, "latency": 1}, {"src": 1, "dst": 2, "bandwidth": 50, "latency": 1}, {"src": 2, "dst": 3, "bandwidth": 50, "latency": 1}, {"src": 3, "dst": 0, "bandwidth": 50, "latency": 1}]}' >"odd$ff/t$ff.json"
run "$TENET" synth -t "odd$ff/t$ff.json" -c allgather -s 1MiB -o "odd$ff/ag" --json
expect_rc 0
utf8_json out.txt && ok || bad "$desc: synth --json is not valid UTF-8 JSON: $(head -c 200 out.txt)"
run "$TENET" sim -t "odd$ff/t$ff.json" "odd$ff/ag" --json
expect_rc 0
utf8_json out.txt && ok || bad "$desc: sim --json is not valid UTF-8 JSON"
run "$TENET" compare -t "odd$ff/t$ff.json" -c allgather --sizes 1KiB --json
expect_rc 0
utf8_json out.txt && ok || bad "$desc: compare --json is not valid UTF-8 JSON"
run "$TENET" batch --topos "odd$ff/t$ff.json" --colls allgather --sizes 1KiB --algos ring -o sweep
expect_rc 0
for f in sweep/batch.json sweep/summary.json; do
  utf8_json "$f" && ok || bad "$desc: $f is not valid UTF-8 JSON"
done
# The repaired label still matches its results: a second run resumes instead of failing.
run "$TENET" batch --topos "odd$ff/t$ff.json" --colls allgather --sizes 1KiB --algos ring -o sweep
expect_rc 0
run "$TENET" et dump "odd$ff/ag"
utf8_json out.txt && ok || bad "et dump is not valid UTF-8 JSON"

desc="sizes above 2^53 print exactly"
big=9007199254741008
run "$TENET" synth -t ring-16 -c allgather -s $big -a ring -o big/ag --json
expect_rc 0
expect_key size_bytes $big
run "$TENET" sim -t ring-16 big/ag --json
expect_key size_bytes $big
run "$TENET" batch --topos ring-16 --colls allgather --sizes $big --algos ring -o bigsweep
expect_rc 0
grep -q "\"size_bytes\":$big[,}]" bigsweep/summary.json && ok || bad "$desc: summary.json: $(head -c 300 bigsweep/summary.json)"
grep -q "$big" bigsweep/batch.json && ok || bad "$desc: batch.json lost the size"
# ... and reads it back: the same sweep resumes (a number past 2^53 is kept as a string).
run "$TENET" batch --topos ring-16 --colls allgather --sizes $big --algos ring -o bigsweep
expect_rc 0
grep -q "1 done before" err.txt && ok || bad "$desc: no resume: $(tail -n 1 err.txt)"

testlib_done
