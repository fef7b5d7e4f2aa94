#!/bin/sh
# run-local.sh: `make run`.  A local instance in .run/ (config, keys with
# a fresh demo key, the sample templates) over the spool in spool/, served
# by lighttpd on 127.0.0.1:$PORT, with msgspoold in the foreground using
# the file provider.  Ctrl-C stops both.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-8080}
run="$top/.run"
mkdir -p "$run/empty" "$top/spool"
for d in tmp new deferred cur sent failed outbox; do mkdir -p "$top/spool/$d"; done
# The key of the demo's one-click unsubscribe links, made once.
[ -s "$run/unsubscribe.secret" ] ||
	(umask 077 && head -c 32 /dev/urandom | base64 >"$run/unsubscribe.secret")

cat >"$run/msgspool.conf" <<CONF
# Written by make run; every channel uses the default file provider,
# which writes what it would send into spool/outbox/.
spool = $top/spool
keys = $run/keys
templates = $top/templates

# Every email of demo carries a one-click unsubscribe link to this
# server (README, One-click unsubscribe).
public-url = http://127.0.0.1:$PORT
unsubscribe-secret-file = $run/unsubscribe.secret

# OTT needs a section per channelType; the README's example uses 1.
[ott.1]
provider = file

# An http provider that sends nothing here (no example uses channelType
# 2), whose receipt-secret signs the README's inbound message.
[ott.2]
provider = http
url = http://127.0.0.1:9/
receipt-secret = whsec_bWFrZSBydW4ncyBkZW1vIGluYm91bmQgc2VjcmV0

[client.demo]
list-unsubscribe = yes
inbound = +15005550006
CONF

# A fresh demo key for the client "demo", which owns the sample templates.
key=$(head -c 33 /dev/urandom | base64 | tr '+/' '-_')
hash=$(printf %s "$key" | sha256sum | cut -d' ' -f1)
printf '# make run: the demo client, every scope\ndemo:%s:*\n' "$hash" >"$run/keys"
printf '%s\n' "$key" >"$run/demo-key"
chmod 600 "$run/demo-key"

export MSGSPOOL_CGI_DIR="$top/build/cgi-bin" MSGSPOOL_CONFIG="$run/msgspool.conf" \
    MSGSPOOL_PORT="$PORT" MSGSPOOL_RUNDIR="$run"
lighttpd -tt -f "$top/conf/lighttpd.conf" >/dev/null
lighttpd -D -f "$top/conf/lighttpd.conf" &
lpid=$!
dpid=
cleanup() {
	trap - INT TERM EXIT
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	kill "$lpid" 2>/dev/null
	wait 2>/dev/null
	echo "msgspool stopped"
}
trap cleanup INT TERM EXIT

cat <<MSG
msgspool is listening on http://127.0.0.1:$PORT/
  demo API key: $key   (also in .run/demo-key)
  try:  curl -s -H "X-API-KEY: \$(cat .run/demo-key)" -H 'Content-Type: application/json' \\
          -d '{"recipient":"+4915112345678","messageBody":"Hello"}' http://127.0.0.1:$PORT/sms/v1/deliver
  spool: $top/spool (outbox/ holds what was "sent")
Ctrl-C stops lighttpd and msgspoold.
MSG
"$top/build/spooler/msgspoold" -c "$run/msgspool.conf" &
dpid=$!
wait "$dpid" || true
