# tests/cli/lib/testlib.bash — shared helpers for the CLI test scripts (sourced, not a test).
# Each script: source this, call `testlib_init "$@" CMD`, use run/ok/bad/check/expect_*,
# end with `testlib_done`.

# testlib_init TENET_BIN SCRATCH_DIR SOURCE_DIR SUBCOMMAND: empties SCRATCH_DIR and works
# inside it; TENET, SCRATCH and SRC are made absolute first, so relative arguments work.
testlib_init() {
  TENET=$1
  SCRATCH=$2
  SRC=$3
  SUBCMD=$4
  case "$TENET" in */*) TENET=$(cd "$(dirname "$TENET")" && pwd)/$(basename "$TENET") ;; esac
  SRC=$(cd "$SRC" && pwd) || exit 1
  rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
  SCRATCH=$PWD
  export TENET_TOPOLOGIES="$SRC/topologies"
  pass=0
  fail=0
  desc=""
}

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# check WHAT CMD...: CMD succeeds (a test, a grep, a comparison); WHAT names it if not.
check() {
  local what=$1
  shift
  if "$@"; then ok; else bad "$what"; fi
}

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
# "tenet SUBCMD: " (or "tenet SUBCMD WORD: "), nothing on stdout, and no file created in
# the scratch folder.
expect_fail() {
  local code=$1 d=$2
  shift 2
  local before after
  before=$(find . -mindepth 1 ! -name out.txt ! -name err.txt | sort | md5sum)
  run "$@"
  after=$(find . -mindepth 1 ! -name out.txt ! -name err.txt | sort | md5sum)
  if [ "$rc" -ne "$code" ]; then bad "$d: exit $rc, want $code ($(head -c 300 err.txt))"; return; fi
  if [ "$(wc -l <err.txt)" -ne 1 ]; then bad "$d: stderr is not one line: $(cat err.txt)"; return; fi
  if ! grep -q "^tenet $SUBCMD\( [a-z]*\)\?: " err.txt; then
    bad "$d: stderr does not start with 'tenet $SUBCMD: ': $(cat err.txt)"; return
  fi
  if [ -s out.txt ]; then bad "$d: printed on stdout"; return; fi
  if [ "$before" != "$after" ]; then bad "$d: left a file behind"; return; fi
  ok
}

# fails_with CODE CMD...: expect_fail, with the command line as its description.
fails_with() {
  local code=$1
  shift
  expect_fail "$code" "'$*'" "$@"
}

# json_ok FILE: FILE holds valid JSON.
json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }

# json_get FILE KEY: prints a top-level value of a JSON object (None as null).
json_get() {
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("null" if v is None else v)' "$1" "$2"
}

# is_png FILE: FILE starts with the PNG signature.
is_png() { test "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a"; }

# testlib_done: the last line of every script; fails the script when any check failed
# or when none ran.
testlib_done() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
}

