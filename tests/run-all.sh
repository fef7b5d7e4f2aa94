#!/bin/sh
# run-all.sh UNIT_TEST...: run the unit tests, the checks of the tree (man
# pages, OpenAPI, layers), the fuzz targets' regressions and the NFS chaos
# test, then the black-box suite (pytest with pytest-xdist, Debian's
# python3) over the programs built under $O, and end with one line
# counting every test: "N passed, N failed".
#
# The black-box files run side by side (MSGSPOOL_JOBS workers, default
# 4), each worker with its own instance, spool and ports.  The whole suite
# runs under the servers of MSGSPOOL_FULL (default: lighttpd with the CGI
# programs and lighttpd in front of msgspool-fcgi); the files marked
# `webserver` (what a web server changes: README.md, "Tests") run under
# the others of MSGSPOOL_SERVERS too (default: all six).  make
# check-servers runs the whole suite under all six.  The output of each
# black-box run is prefixed with its server's name.
set -u
O=${O:-build/}
PYTHON=${PYTHON:-/usr/bin/python3}
SERVERS=${MSGSPOOL_SERVERS:-lighttpd nginx apache busybox lighttpd-fcgi nginx-fcgi}
FULL=${MSGSPOOL_FULL:-lighttpd lighttpd-fcgi}
JOBS=${MSGSPOOL_JOBS:-4}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0
failed=0
start=$(date +%s)

# The fuzz targets and the NFS chaos test use the CPU and UML kernels while
# the black-box suite mostly waits on its servers: they run beside it,
# their output shown and counted at the end.
"$top/tests/fuzz/run.sh" check "${MSGSPOOL_FUZZ_SECONDS:-15}" \
    >"$tmp/fuzz.out" 2>&1 &
fuzzpid=$!
nfspid=
if [ "${MSGSPOOL_NFS:-1}" != 0 ]; then
	O=$O timeout -k 10 660 "$top/tests/nfs/run.sh" chaos \
	    >"$tmp/nfs.out" 2>&1 &
	nfspid=$!
fi

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

# The documents: the man pages (mandoc's linter) and the OpenAPI
# description (Redocly, installed by npm).  Each counts as one test; the
# OpenAPI lint is skipped, and says so, only where it cannot run at all
# (no Node.js >= 20.19 and npm, or no npm registry).
if "$top/tests/lint-man.sh" >"$tmp/lint-man.out" 2>&1; then
	echo "ok   lint-man ($(grep -c '^ok ' "$tmp/lint-man.out") pages)"
	passed=$((passed + 1))
else
	echo "FAIL lint-man"
	cat "$tmp/lint-man.out"
	failed=$((failed + 1))
fi
"$top/tests/openapi/lint.sh" >"$tmp/openapi.out" 2>&1
rc=$?
case $rc in
0)	echo "ok   $(tail -n 1 "$tmp/openapi.out")"
	passed=$((passed + 1)) ;;
2)	cat "$tmp/openapi.out"
	echo "SKIP openapi lint: it cannot run here (see above)" ;;
*)	echo "FAIL openapi lint"
	cat "$tmp/openapi.out"
	failed=$((failed + 1)) ;;
esac

# The include graph between the source folders (tests/layers.py).
if "$PYTHON" "$top/tests/layers.py" >"$tmp/layers.out" 2>&1; then
	tail -n 1 "$tmp/layers.out"
	passed=$((passed + 1))
else
	echo "FAIL layers"
	cat "$tmp/layers.out"
	failed=$((failed + 1))
fi

for server in $SERVERS; do
	case " $FULL " in
	*" $server "*)	which="the black-box suite"; only= ;;
	*)		which="the webserver files"; only="-m webserver" ;;
	esac
	echo "== $which under $server"
	rm -f "$tmp/junit.xml" "$tmp/rc"
	{
		MSGSPOOL_SERVER=$server MSGSPOOL_CGI_DIR="$top/${O}cgi-bin" \
		    MSGSPOOL_BIN_DIR="$top/${O}spooler" \
		    MSGSPOOL_FCGI_DIR="$top/${O}fcgi" O=$O \
		    "$PYTHON" -m pytest -q -p no:cacheprovider -n "$JOBS" \
		    $only --junitxml="$tmp/junit.xml" "$top/tests/blackbox" 2>&1
		echo $? >"$tmp/rc"
	} | sed -u "s/^/[$server] /"
	rc=$(cat "$tmp/rc" 2>/dev/null || echo 1)
	p=0 f=0 sk=0
	if [ -f "$tmp/junit.xml" ]; then
		set -- $("$PYTHON" - "$tmp/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - sk, f, sk)
PY
)
		p=$1 f=$2 sk=$3
	fi
	# pytest failed without saying which test (or wrote no report).
	[ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "$f" -eq 0 ] && f=1
	echo "== $server: $p passed, $f failed, $sk skipped"
	passed=$((passed + p))
	failed=$((failed + f))
done
# The fuzz targets (tests/fuzz/run.sh): each regression input replayed
# and each target fuzzed briefly (MSGSPOOL_FUZZ_SECONDS, default 15), one
# test each; skipped, and said so, where clang cannot build them.
wait "$fuzzpid"
rc=$?
cat "$tmp/fuzz.out"
if [ "$rc" -ne 2 ]; then
	p=$(grep -c '^ok ' "$tmp/fuzz.out")
	f=$(grep -c '^FAIL ' "$tmp/fuzz.out")
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	passed=$((passed + p))
	failed=$((failed + f))
fi

# Several hosts, one spool, on real NFS under user-mode Linux
# (tests/nfs/run.sh chaos, make check-nfs): one test, bounded (about two
# minutes, at most 660 s), skipped and said so where it cannot run;
# MSGSPOOL_NFS=0 leaves it out.
if [ -n "$nfspid" ]; then
	wait "$nfspid"
	rc=$?
	case $rc in
	0)	cat "$tmp/nfs.out"
		echo "ok   check-nfs"
		passed=$((passed + 1)) ;;
	2)	cat "$tmp/nfs.out" ;;
	*)	cat "$tmp/nfs.out"
		echo "FAIL check-nfs"
		failed=$((failed + 1)) ;;
	esac
fi

echo "$passed passed, $failed failed ($(( $(date +%s) - start )) s)"
[ "$failed" -eq 0 ]
