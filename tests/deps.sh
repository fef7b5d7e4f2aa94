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
if ! apt-get install -y -q --no-install-recommends $missing; then
	apt-get update -q && apt-get install -y -q --no-install-recommends $missing || exit 1
fi
