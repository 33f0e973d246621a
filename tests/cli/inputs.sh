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

# refused SUBCMD NEEDLE CMD...: CMD (bounded by a timeout, so that a regression that blocks
# fails instead of hanging the suite) fails with exit 1, one line "tenet SUBCMD...: ",
# containing NEEDLE.
refused() {
  SUBCMD=$1
  local needle=$2
  shift 2
  expect_fail 1 "'$*'" timeout 10 "$@"
  desc="'$*'"
  expect_msg "$needle"
}

mkfifo "$SCRATCH/fifo.0.et" "$SCRATCH/fifo.json" "$SCRATCH/fifo.xml"
mkdir -p "$SCRATCH/dir.0.et" "$SCRATCH/dir.json"
FIFO_ET="$SCRATCH/fifo.0.et: a FIFO, not a regular file"

# ---- Chakra rank files: every reader of a set ----------------------------------------
refused et "$FIFO_ET" "$TENET" et dump "$SCRATCH/fifo"
refused et "$FIFO_ET" "$TENET" et dot "$SCRATCH/fifo" --rank 0
refused sim "$FIFO_ET" "$TENET" sim -t ring-4 "$SCRATCH/fifo"
refused verify "$FIFO_ET" "$TENET" verify -t ring-4 -c allgather -s 1MiB "$SCRATCH/fifo"
refused export "$FIFO_ET" "$TENET" export msccl -t ring-4 -c allgather -s 1MiB \
  "$SCRATCH/fifo" -o x.xml
refused et "$SCRATCH/dir.0.et: a directory, not a regular file" "$TENET" et dump "$SCRATCH/dir"
# A FIFO as a later rank of an otherwise good set.
run "$TENET" synth -t ring-4 -c allgather -s 1MiB -a ring -o "$SCRATCH/set/ag"
check "synth ring-4" test "$rc" -eq 0
rm -f "$SCRATCH/set/ag.2.et" && mkfifo "$SCRATCH/set/ag.2.et"
refused sim "set/ag.2.et: a FIFO, not a regular file" "$TENET" sim -t ring-4 "$SCRATCH/set/ag"

# ---- topologies, MSCCL programs, manifests -------------------------------------------
refused "topo info" "fifo.json: a FIFO, not a regular file" "$TENET" topo info "$SCRATCH/fifo.json"
refused "topo info" "dir.json: a directory, not a regular file" "$TENET" topo info "$SCRATCH/dir.json"
refused "topo info" "/dev/zero: a character device, not a regular file" "$TENET" topo info /dev/zero
refused sim "fifo.json: a FIFO, not a regular file" "$TENET" sim -t "$SCRATCH/fifo.json" "$SCRATCH/set/ag"
refused import "fifo.xml: a FIFO, not a regular file" "$TENET" import msccl "$SCRATCH/fifo.xml" \
  -s 1MiB -o imp
refused import "/dev/null: a character device, not a regular file" "$TENET" import msccl /dev/null \
  -s 1MiB -o imp
refused batch "fifo.json: a FIFO, not a regular file" "$TENET" batch --manifest "$SCRATCH/fifo.json" \
  -o out

testlib_done
