#!/usr/bin/env bash
# tests/cli/inputs.sh — what tenet accepts as an input file, on the built binary: only a
# regular file. A FIFO (whose open would wait for a writer forever), a device or a
# directory given where a topology, a Chakra rank file, an MSCCL program or a manifest is
# read is refused at once with exit 1 and one line naming the path and what it is; and
# gzip'd Chakra files inflate only within their budget.
# Usage: bash inputs.sh TENET_BIN SCRATCH_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib/testlib.bash"
testlib_init "$@" inputs

# refused CODE SUBCMD NEEDLE CMD...: CMD (bounded by a timeout, so that a regression that
# blocks fails instead of hanging the suite) fails with exit CODE, one line
# "tenet SUBCMD...: " containing NEEDLE.
refused() {
  local code=$1 needle=$3
  SUBCMD=$2
  shift 3
  expect_fail "$code" "'$*'" timeout 10 "$@"
  desc="'$*'"
  expect_msg "$needle"
}

mkfifo "$SCRATCH/fifo.0.et" "$SCRATCH/fifo.json" "$SCRATCH/fifo.xml"
mkdir -p "$SCRATCH/dir.0.et" "$SCRATCH/dir.json"
FIFO_ET="$SCRATCH/fifo.0.et: a FIFO, not a regular file"

# ---- Chakra rank files: every reader of a set ----------------------------------------
refused 1 et "$FIFO_ET" "$TENET" et dump "$SCRATCH/fifo"
refused 1 et "$FIFO_ET" "$TENET" et dot "$SCRATCH/fifo" --rank 0
refused 1 sim "$FIFO_ET" "$TENET" sim -t ring-4 "$SCRATCH/fifo"
refused 1 verify "$FIFO_ET" "$TENET" verify -t ring-4 -c allgather -s 1MiB "$SCRATCH/fifo"
refused 1 export "$FIFO_ET" "$TENET" export msccl -t ring-4 -c allgather -s 1MiB \
  "$SCRATCH/fifo" -o x.xml
refused 1 et "$SCRATCH/dir.0.et: a directory, not a regular file" "$TENET" et dump "$SCRATCH/dir"
# A FIFO as a later rank of an otherwise good set.
run "$TENET" synth -t ring-4 -c allgather -s 1MiB -a ring -o "$SCRATCH/set/ag"
check "synth ring-4" test "$rc" -eq 0
rm -f "$SCRATCH/set/ag.2.et" && mkfifo "$SCRATCH/set/ag.2.et"
refused 1 sim "set/ag.2.et: a FIFO, not a regular file" "$TENET" sim -t ring-4 "$SCRATCH/set/ag"

# ---- topologies, MSCCL programs, manifests -------------------------------------------
refused 1 "topo info" "fifo.json: a FIFO, not a regular file" "$TENET" topo info "$SCRATCH/fifo.json"
refused 1 "topo info" "dir.json: a directory, not a regular file" "$TENET" topo info "$SCRATCH/dir.json"
refused 1 "topo info" "/dev/zero: a character device, not a regular file" "$TENET" topo info /dev/zero
refused 1 sim "fifo.json: a FIFO, not a regular file" "$TENET" sim -t "$SCRATCH/fifo.json" "$SCRATCH/set/ag"
refused 1 import "fifo.xml: a FIFO, not a regular file" "$TENET" import msccl "$SCRATCH/fifo.xml" \
  -s 1MiB -o imp
refused 1 import "/dev/null: a character device, not a regular file" "$TENET" import msccl /dev/null \
  -s 1MiB -o imp
refused 1 batch "fifo.json: a FIFO, not a regular file" "$TENET" batch --manifest "$SCRATCH/fifo.json" \
  -o out

# ---- gzip'd Chakra files ---------------------------------------------------------------
# A real set gzip'd at the strongest level (Chakra files compress 5 to 10 times) reads.
mkdir -p gz && cp "$SCRATCH"/set/ag.[013].et gz/ && run "$TENET" synth -t ring-4 -c allgather \
  -s 1MiB -a ring -o "$SCRATCH/plain/ag"
cp "$SCRATCH/plain/ag.2.et" gz/ && gzip -9 -n gz/ag.*.et && for f in gz/ag.*.et.gz; do
  mv "$f" "${f%.gz}"
done
SUBCMD=sim
run "$TENET" sim -t ring-4 gz/ag --json
check "a gzip -9 set reads: $(cat err.txt)" test "$rc" -eq 0
# A gzip bomb: 64 MiB of zeros in about 64 KiB is refused once it passes 64 times its
# compressed size, before it is inflated whole (exit 2, a limit, like a file over 1 GiB).
mkdir -p bomb && cp gz/ag.*.et bomb/ && head -c 64M /dev/zero | gzip -9 -n >bomb/ag.1.et
refused 2 sim "bomb/ag.1.et: gzip inflates past" "$TENET" sim -t ring-4 "$SCRATCH/bomb/ag"
refused 2 et "times, at least 1048576; docs/chakra-format.md" "$TENET" et dump "$SCRATCH/bomb/ag"

testlib_done
