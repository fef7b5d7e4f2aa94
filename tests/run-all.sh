#!/bin/sh
# run-all.sh UNIT_TEST...: run the unit tests, then the black-box suite
# (pytest, Debian's python3) over the programs built under $O, and end
# with one line counting every test: "N passed, N failed".
set -u
O=${O:-}
PYTHON=${PYTHON:-/usr/bin/python3}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0
failed=0

for t in "$@"; do
	name=$(basename "$t")
	CMOCKA_MESSAGE_OUTPUT=TAP "$t" >"$tmp/$name.tap" 2>"$tmp/$name.err"
	rc=$?
	p=$(grep -c '^ok ' "$tmp/$name.tap")
	f=$(grep -c '^not ok ' "$tmp/$name.tap")
	# A crash before the plan completes counts as a failure.
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		echo "FAIL $name"
		cat "$tmp/$name.tap" "$tmp/$name.err"
	else
		echo "ok   $name ($p)"
	fi
done

MSGSPOOL_CGI_DIR="$top/${O}cgi-bin" MSGSPOOL_BIN_DIR="$top/${O}spooler" \
    "$PYTHON" -m pytest -q -p no:cacheprovider --junitxml="$tmp/junit.xml" \
    "$top/tests/blackbox"
rc=$?
if [ -f "$tmp/junit.xml" ]; then
	set -- $("$PYTHON" - "$tmp/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - sk, f)
PY
)
	passed=$((passed + $1))
	failed=$((failed + $2))
elif [ "$rc" -ne 0 ]; then
	failed=$((failed + 1))
fi
[ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "$failed" -eq 0 ] && failed=1
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
