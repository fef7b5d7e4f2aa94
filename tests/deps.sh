#!/bin/sh
# deps.sh PACKAGE...: make sure these Debian packages are installed.
# As root, install the missing ones with apt-get; otherwise print the
# exact command to run and fail.
set -u
missing=
if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: not a Debian system; make sure the equivalents of these are installed: $*" >&2
	exit 0
fi
for p in "$@"; do
	s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
	[ "$s" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages:$missing" >&2
	echo "deps: install them with:  sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# The servers installed for the tests (nginx, fcgiwrap, postfix) are run
# by the tests on their own ports; keep their packages from starting the
# system's copies (on port 80, 25) while they install (policy-rc.d(8)).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# msgspool deps.sh: no service starts during this install\nexit 101\n' >"$policy" &&
	    chmod 0755 "$policy" &&
	    trap 'rm -f "$policy"' EXIT &&
	    trap 'rm -f "$policy"; exit 1' INT TERM
fi
if ! apt-get install -y -q --no-install-recommends $missing; then
	apt-get update -q && apt-get install -y -q --no-install-recommends $missing || exit 1
fi
