#!/usr/bin/env bash
# run_browser_test.sh BUILD_DIR SOURCE_DIR: open fleetsim's HTML reports in
# headless Chromium (Debian's /usr/bin/chromium, or $CHROMIUM) and check them
# with check_report.js; the ctest BrowserReportCheck.
#
#   0. check_report.js itself: the fixture tests/browser/data/good_report.html
#      must pass, and copies of it with a planted fault (plant.js: a script
#      error, an emptied plot, a NaN coordinate, an outside request, a hidden
#      plot) must each fail with the matching reason;
#   a. fleetsim run scenarios/quickstart.json + fleetsim report -> report.html;
#   b. fleetsim plan tests/plan/data/small_plan.json -> report.html;
#   c. both reports must pass;
#   d. the plan report with a planted script error must fail (exit 1) and
#      name the error;
#   e. the plan report with its first plot emptied must fail.
#
# playwright-core (pinned below) is installed with npm into BUILD_DIR/npm the
# first time; no browser is ever downloaded. Node, npm and chromium missing
# is a failure, never a skip (make deps-test installs them).
set -euo pipefail

# playwright-core 1.62+ needs Node >= 20; Debian 12's own nodejs is 18, for
# which 1.61.1 is the last release.
PLAYWRIGHT_VERSION_NODE20=1.65.1
PLAYWRIGHT_VERSION_NODE18=1.61.1

fail() {
  echo "run_browser_test.sh: FAIL: $*" >&2
  exit 1
}

if [ $# -ne 2 ]; then
  echo "usage: run_browser_test.sh BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
[ -d "$1" ] || fail "no build folder $1"
[ -d "$2" ] || fail "no source folder $2"
BUILD_DIR=$(cd "$1" && pwd)
SOURCE_DIR=$(cd "$2" && pwd)
HERE="$SOURCE_DIR/tests/browser"
FLEETSIM="$BUILD_DIR/fleetsim"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

command -v node >/dev/null 2>&1 || fail "node is not installed (make deps-test installs nodejs)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed (make deps-test installs nodejs and npm)"
[ -x "$CHROMIUM" ] || fail "no chromium at $CHROMIUM (make deps-test installs Debian's chromium)"
[ -x "$FLEETSIM" ] || fail "no fleetsim executable at $FLEETSIM (build it first)"

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -ge 20 ]; then
  PLAYWRIGHT_VERSION=$PLAYWRIGHT_VERSION_NODE20
elif [ "$node_major" -ge 18 ]; then
  PLAYWRIGHT_VERSION=$PLAYWRIGHT_VERSION_NODE18
else
  fail "node $(node --version) is too old for playwright-core (needs 18 or later)"
fi

# ---- playwright-core, once per build folder ---------------------------------
NPM_PREFIX="$BUILD_DIR/npm"
export NODE_PATH="$NPM_PREFIX/node_modules"
installed=$(node -e 'try { const p = require("playwright-core/package.json");
                           require("playwright-core"); console.log(p.version); } catch (e) {}' 2>/dev/null || true)
if [ "$installed" != "$PLAYWRIGHT_VERSION" ]; then
  echo "installing playwright-core@$PLAYWRIGHT_VERSION into $NPM_PREFIX (no browser download)"
  mkdir -p "$NPM_PREFIX"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$NPM_PREFIX" --no-audit --no-fund \
    "playwright-core@$PLAYWRIGHT_VERSION" || fail "npm install playwright-core@$PLAYWRIGHT_VERSION failed"
  installed=$(node -p 'require("playwright-core/package.json").version' 2>/dev/null || true)
  [ "$installed" = "$PLAYWRIGHT_VERSION" ] || fail "playwright-core@$PLAYWRIGHT_VERSION did not install into $NPM_PREFIX"
fi
echo "node $(node --version), playwright-core $installed, $("$CHROMIUM" --version 2>/dev/null | head -n 1)"

TMP=$(mktemp -d "$BUILD_DIR/browser-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

check() {
  node "$HERE/check_report.js" "$@"
}

# expect_fail OUTPUT_FILE PATTERN WHAT: the last check (its output in
# OUTPUT_FILE, its exit status in $rc) must have failed with exit 1, and its
# FAIL line must match PATTERN (grep -E).
expect_fail() {
  local out=$1 pattern=$2 what=$3
  cat "$out"
  [ "$rc" -eq 1 ] || fail "check_report.js exited $rc (not 1) on $what"
  grep -E '^FAIL ' "$out" | grep -Eq -- "$pattern" ||
    fail "check_report.js did not report /$pattern/ on $what"
  echo "  -> fails as it should ($what)"
}

# ---- 0. the checker on the fixture and its planted copies -------------------
echo "== check_report.js on the fixture"
check "$HERE/data/good_report.html" || fail "the fixture $HERE/data/good_report.html does not pass"
declare -A reason=(
  [script-error]='page error: .*fleetsimPlantedError'
  [empty-plot]='plot #0.*data-points="0".*no circle\.pt or path\.line'
  [nan]='circle\.pt #0 cx="NaN"'
  [external]='request to a non-file URL: http://fleetsim\.invalid/'
  [hidden-plot]='plot #0.*rendered box 0x0'
)
planted=()
for mode in script-error empty-plot nan external hidden-plot; do
  node "$HERE/plant.js" "$mode" "$HERE/data/good_report.html" "$TMP/fixture-$mode.html" ||
    fail "plant.js $mode failed on the fixture"
  planted+=("$TMP/fixture-$mode.html")
done
rc=0
check "${planted[@]}" >"$TMP/fixture.out" 2>&1 || rc=$?
cat "$TMP/fixture.out"
[ "$rc" -eq 1 ] || fail "check_report.js exited $rc (not 1) on the planted fixtures"
for mode in "${!reason[@]}"; do
  grep -E "^FAIL $TMP/fixture-$mode\.html: " "$TMP/fixture.out" | grep -Eq -- "${reason[$mode]}" ||
    fail "check_report.js did not report /${reason[$mode]}/ on the fixture with a planted $mode"
done
echo "  -> each planted fixture fails as it should"

# ---- a. run + report --------------------------------------------------------
echo "== fleetsim run + report"
"$FLEETSIM" run "$SOURCE_DIR/scenarios/quickstart.json" --out "$TMP/run" --quiet ||
  fail "fleetsim run scenarios/quickstart.json failed"
"$FLEETSIM" report "$TMP/run" || fail "fleetsim report $TMP/run failed"
[ -s "$TMP/run/report.html" ] || fail "fleetsim report wrote no $TMP/run/report.html"

# ---- b. plan -----------------------------------------------------------------
echo "== fleetsim plan"
"$FLEETSIM" plan "$SOURCE_DIR/tests/plan/data/small_plan.json" --out "$TMP/plan" -j 2 --quiet ||
  fail "fleetsim plan tests/plan/data/small_plan.json failed"
[ -s "$TMP/plan/report.html" ] || fail "fleetsim plan wrote no $TMP/plan/report.html"

# ---- c. both reports pass ---------------------------------------------------
echo "== check_report.js on the run and plan reports"
check "$TMP/run/report.html" "$TMP/plan/report.html" || fail "a fleetsim report does not pass check_report.js"

# ---- d. a planted script error must fail ------------------------------------
echo "== the plan report with a planted script error"
node "$HERE/plant.js" script-error "$TMP/plan/report.html" "$TMP/plan-script-error.html" ||
  fail "could not plant a script error in the plan report"
rc=0
check "$TMP/plan-script-error.html" >"$TMP/d.out" 2>&1 || rc=$?
expect_fail "$TMP/d.out" 'fleetsimPlantedError' "the plan report with a planted script error"

# ---- e. an emptied plot must fail -------------------------------------------
echo "== the plan report with its first plot emptied"
node "$HERE/plant.js" empty-plot "$TMP/plan/report.html" "$TMP/plan-empty-plot.html" ||
  fail "could not empty a plot of the plan report"
rc=0
check "$TMP/plan-empty-plot.html" >"$TMP/e.out" 2>&1 || rc=$?
expect_fail "$TMP/e.out" 'data-points="0"' "the plan report with an emptied plot"

echo "run_browser_test.sh: all browser checks passed"
