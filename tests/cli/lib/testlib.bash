# tests/cli/lib/testlib.bash — shared helpers for the CLI test scripts (sourced, not a test).
# Each script: source this, call `testlib_init "$@" CMD`, use run/ok/bad/expect_*, end with
# `testlib_done`.

# testlib_init TENET_BIN SCRATCH_DIR SOURCE_DIR SUBCOMMAND
testlib_init() {
  TENET=$1
  SCRATCH=$2
  SRC=$3
  SUBCMD=$4
  rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
  export TENET_TOPOLOGIES="$SRC/topologies"
  pass=0
  fail=0
  desc=""
}

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# run CMD...: captures stdout in out.txt, stderr in err.txt and the exit code in rc.
run() {
  "$@" >out.txt 2>err.txt
  rc=$?
}

# flat: the last stdout without whitespace, for grepping JSON keys.
flat() { tr -d ' \t\n' <out.txt; }

# expect_key KEY VALUE: the last run printed "KEY": VALUE.
expect_key() {
  if flat | grep -q "\"$1\":$2[,}]"; then ok; else bad "$desc: expected \"$1\": $2 in $(flat | head -c 400)"; fi
}

# expect_rc CODE: the last run exited with CODE.
expect_rc() {
  if [ "$rc" -eq "$1" ]; then ok; else bad "$desc: exit $rc, want $1 ($(head -c 300 err.txt))"; fi
}

# expect_msg FRAGMENT: the last error message contains FRAGMENT.
expect_msg() {
  if grep -qF -- "$1" err.txt; then ok; else bad "$desc: '$(cat err.txt)' lacks '$1'"; fi
}

# expect_fail CODE DESC CMD...: exits CODE, exactly one line on stderr starting with
# "tenet SUBCMD", nothing on stdout, and no file created in the scratch folder.
expect_fail() {
  local code=$1 d=$2
  shift 2
  local before after
  before=$(find . -mindepth 1 ! -name out.txt ! -name err.txt | sort | md5sum)
  run "$@"
  after=$(find . -mindepth 1 ! -name out.txt ! -name err.txt | sort | md5sum)
  if [ "$rc" -ne "$code" ]; then bad "$d: exit $rc, want $code ($(cat err.txt))"; return; fi
  if [ "$(wc -l <err.txt)" -ne 1 ]; then bad "$d: stderr is not one line: $(cat err.txt)"; return; fi
  if ! grep -q "^tenet $SUBCMD" err.txt; then bad "$d: stderr does not start with 'tenet $SUBCMD'"; return; fi
  if [ -s out.txt ]; then bad "$d: printed on stdout"; return; fi
  if [ "$before" != "$after" ]; then bad "$d: left a file behind"; return; fi
  ok
}

testlib_done() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
