#!/usr/bin/env bash
# tests/cli/setid.sh — a Chakra set is one unit: every reader refuses files of two sets
# mixed and a set cut short; a rename that fails midway puts the previous set back (or
# names the ranks it could not); SIGINT, SIGTERM and SIGHUP during a write leave no
# temporary and the previous set whole; what SIGKILL leaves is removed by the next write
# to the prefix, also when batch resumes. Faults and slow renames come from strace, and
# those parts are skipped (and say so) where strace cannot trace.
# Usage: bash setid.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" et

SYN=(synth -t ring-8 -c allgather)
# leftovers DIR: the temporaries and backups in DIR, one per line.
leftovers() { find "$1" -name '*.tmp.*' -o -name '*.old.*'; }
# same_set A B: the rank files of prefixes A and B are identical, 8 ranks.
same_set() {
  for r in 0 1 2 3 4 5 6 7; do cmp -s "$1.$r.et" "$2.$r.et" || return 1; done
  [ ! -e "$1.8.et" ]
}

"$TENET" "${SYN[@]}" -s 1MiB -o a/ag >/dev/null 2>&1 && "$TENET" "${SYN[@]}" -s 2MiB -o b/ag >/dev/null 2>&1
check "two sets written" test -e a/ag.7.et -a -e b/ag.7.et
cp -r a keep

# ---- every reader refuses a hand-made mix, naming the odd ranks ------------------------
# Ring and Direct All-Gather of one size: the same header (collective, size, chunks), so
# only the set id tells their files apart (et dump used to accept this mix, and sim and
# verify blamed an unmatched message).
"$TENET" "${SYN[@]}" -s 1MiB -a ring -o r/ag >/dev/null 2>&1
"$TENET" "${SYN[@]}" -s 1MiB -a direct -o d/ag >/dev/null 2>&1
mkdir mix && cp r/ag.*.et mix/ && cp d/ag.5.et d/ag.6.et d/ag.7.et mix/
for cmd in "et dump mix/ag" "sim -t ring-8 mix/ag" "verify -t ring-8 -c allgather -s 1MiB mix/ag" \
  "export msccl -t ring-8 -c allgather -s 1MiB mix/ag -o mix.xml"; do
  SUBCMD=${cmd%% *}
  desc="$cmd (a mixed set)"
  # shellcheck disable=SC2086
  expect_fail 1 "$desc" "$TENET" $cmd
  expect_msg "mix/ag: ranks 5-7 belong to another set (id "
  expect_msg ") than ranks 0-4 (id "
done
SUBCMD=et
desc="et dump of a set cut short"
rm mix/ag.5.et
expect_fail 1 "$desc" "$TENET" et dump mix/ag
expect_msg "mix/ag: an incomplete set: ranks 0-4 of 8 (id "
expect_msg "mix/ag.5.et is missing"
desc="et dump of the unmixed sets"
run "$TENET" et dump a/ag
expect_rc 0

# ---- faults and signals during the write (strace) -------------------------------------
if ! strace -f -o /dev/null true 2>/dev/null; then
  echo "SKIP: strace cannot trace here: rename faults and signals during writes not tested"
  testlib_done
  exit
fi
# LeakSanitizer cannot run under ptrace (an ASan build would fail at exit): off there.
STRACE=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -o /dev/null)

# A failed rename (the 5th: rank 2's previous file moved aside) puts ranks 0-1 back.
SUBCMD=synth
desc="synth with its 5th rename failing"
expect_fail 1 "$desc" "${STRACE[@]}" -e trace=rename -e inject=rename:error=EIO:when=5 \
  "$TENET" "${SYN[@]}" -s 2MiB -o a/ag
expect_msg "Input/output error; the previous files are left as they were"
check "failed rename: previous set intact" same_set a/ag keep/ag
check "failed rename: no leftovers" test -z "$(leftovers a)"

# Every rename from the 5th on fails: ranks 0-1 cannot be taken back; the writer says so
# and the readers refuse the mix.
desc="synth with every rename from the 5th failing"
run "${STRACE[@]}" -e trace=rename -e inject=rename:error=EIO:when=5+ "$TENET" "${SYN[@]}" -s 2MiB -o a/ag
expect_rc 1
expect_msg "ranks 0-1 of the new set could not be taken back"
check "stuck rename: one line" test "$(wc -l <err.txt)" -eq 1
SUBCMD=et
desc="et dump after the stuck rename"
expect_fail 1 "$desc" "$TENET" et dump a/ag
expect_msg "a/ag: ranks 0-1 belong to another set"
desc="synth after the stuck rename"
run "$TENET" "${SYN[@]}" -s 1MiB -o a/ag
expect_rc 0
check "stuck rename: next write removed the leftovers" test -z "$(leftovers a)"
check "stuck rename: next write is the set again" same_set a/ag keep/ag

# wait_for DIR PATTERN COUNT: waits (at most 20 s) until COUNT names in DIR match PATTERN;
# prints the pid of the writer (from a temporary's name).
wait_for() {
  for _ in $(seq 1 200); do
    if [ "$(ls "$1" | grep -c -- "$2")" -ge "$3" ]; then
      ls "$1" | grep -o '\.\(tmp\|old\)\.[0-9]*$' | head -n 1 | grep -o '[0-9]*$'
      return
    fi
    sleep 0.1
  done
}

# A signal during the renames (each slowed to 0.2 s: the 16 renames of a set take 3.2 s, so
# a loaded machine that polls late still signals midway) or during the writes (each
# slowed to 0.1 s): no temporary is left and the previous set is whole again. (Job control on:
# a background job of a script otherwise starts with SIGINT ignored, and tenet keeps an
# ignored signal ignored.)
set -m
for phase in rename write; do
  for sig in INT TERM HUP; do
    desc="SIG$sig during the ${phase}s"
    delay=100000
    [ $phase = rename ] && delay=200000
    "${STRACE[@]}" -e trace=$phase -e inject=$phase:delay_enter=$delay \
      "$TENET" "${SYN[@]}" -s 2MiB -o a/ag >/dev/null 2>err.txt &
    tracer=$!
    if [ $phase = rename ]; then pid=$(wait_for a '\.old\.' 2); else pid=$(wait_for a '\.tmp\.' 1); fi
    if [ -z "$pid" ]; then
      bad "$desc: the write never started"
      kill $tracer
    else
      kill -$sig "$pid"
    fi
    wait $tracer
    rc=$?
    want=$((128 + $(kill -l $sig)))
    check "$desc: killed by the signal (exit $rc, want $want)" test $rc -eq $want
    check "$desc: no leftovers ($(leftovers a | head -n 3))" test -z "$(leftovers a)"
    check "$desc: previous set whole" same_set a/ag keep/ag
  done
done

# SIGKILL midway through the renames leaves a mix and temporaries: readers refuse the mix,
# and the next write to the prefix removes what was left.
desc="SIGKILL during the renames"
# Each rename slowed to 0.3 s: the kill lands a few renames after the third rank's
# previous file moved aside, however late a loaded machine polls.
"${STRACE[@]}" -e trace=rename -e inject=rename:delay_enter=300000 \
  "$TENET" "${SYN[@]}" -s 2MiB -o a/ag >/dev/null 2>&1 &
tracer=$!
pid=$(wait_for a '\.old\.' 3)
[ -n "$pid" ] && kill -KILL "$pid"
wait $tracer
check "$desc: temporaries left" test -n "$(leftovers a)"
set +m
run "$TENET" et dump a/ag
expect_rc 1
# Ranks 0-1 are new; how many more are new, and whether the next one is missing (moved
# aside) or old, depends on the moment the kill lands.
check "$desc: et dump refuses the mix ($(cat err.txt))" \
  grep -q "a/ag: \(ranks 0-[1-6] belong to another set\|an incomplete set: ranks 0-[1-6] of 8\)" err.txt
run "$TENET" "${SYN[@]}" -s 1MiB -o a/ag
expect_rc 0
check "$desc: next write removed the leftovers ($(leftovers a | head -n 3))" test -z "$(leftovers a)"
check "$desc: next write is the set again" same_set a/ag keep/ag

# ---- batch resumed after SIGKILL ------------------------------------------------------
# What a killed batch leaves in a case folder (a temporary of its set and of its
# result.json, written by a process that is gone) goes when the case is run again.
desc="batch resumed after SIGKILL"
B=(batch --topos ring-8 --colls allgather --sizes 1MiB --algos ring --keep all -o bt)
"$TENET" "${B[@]}" 2>/dev/null
case_dir=$(dirname "$(find bt/cases -name result.json | head -n 1)")
dead=$(sh -c 'echo $$')
echo x >"$case_dir/chakra.3.et.tmp.$dead"
echo x >"$case_dir/chakra.3.et.old.$dead"
echo x >"$case_dir/result.json.tmp.$dead"
rm "$case_dir/result.json"
run "$TENET" "${B[@]}"
expect_rc 0
check "$desc: no leftovers ($(leftovers bt | head -n 3))" test -z "$(leftovers bt)"

testlib_done
