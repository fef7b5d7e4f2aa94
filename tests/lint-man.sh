#!/bin/sh
# lint-man.sh: check every man page, man/*.[1-8], with mandoc's linter at
# the warning level (Debian package: mandoc).  Prints "ok man/PAGE" for a
# clean page, "FAIL man/PAGE" and mandoc's messages for one that is not,
# and exits 1 if any page has a warning, an error, or cannot be read.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

if ! command -v mandoc >/dev/null 2>&1; then
	echo "lint-man: mandoc not found; install it with:  apt-get install -y mandoc" >&2
	exit 1
fi

failed=0
found=0
for page in man/*.[1-8]; do
	[ -f "$page" ] || continue
	found=$((found + 1))
	# -W warning: report warnings and worse (not style hints); mandoc
	# then exits 0 only when there is none.
	out=$(mandoc -T lint -W warning "$page" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] || printf '%s\n' "$out" |
	    grep -Eq ': (WARNING|ERROR|UNSUPP|BADARG|SYSERR):'; then
		echo "FAIL $page"
		[ -n "$out" ] && printf '%s\n' "$out"
		[ -z "$out" ] && echo "mandoc exited $rc"
		failed=$((failed + 1))
	else
		echo "ok $page"
	fi
done

if [ "$found" -eq 0 ]; then
	echo "lint-man: no man pages in $top/man" >&2
	exit 1
fi
[ "$failed" -eq 0 ]
