#!/bin/bash
# run.sh [chaos|throughput]: several hosts, one spool, on real NFS
# (README "Several hosts, one spool"; make check-nfs runs "chaos").
#
# An NFS 4.2 server and three clients, each a user-mode Linux kernel
# (Debian's user-mode-linux) on a tap device, bridged in a network
# namespace of their own; the server's lease is $LEASE seconds.  Each
# client mounts the export (vers=4.2,hard) and runs the real programs
# on the one spool: sms-deliver, invoked as a CGI program with a CGI
# environment, and msgspoold with the file provider, each daemon
# writing what it sends into a directory of its own on the host.
#
# chaos: load on every client while daemons are killed (kill -9, then
# restarted), a whole client kernel is killed (and booted again), and a
# client is cut off longer than the lease.  Then: every accepted id in
# exactly one final state, tmp/ new/ cur/ empty, every id sent, and
# every id sent twice explained by a daemon that was killed or cut off
# while it held it.  Then keywords (msgspool-spool(5), Keywords): a STOP
# taken by one host's receipts program stops that number on every host,
# a message to it scheduled before ending failed, suppressed, and one
# sent after it refused 422 by both other hosts, never sent.  Prints the
# counts.
# throughput: the same spool drained by 1, 2 and 3 daemon hosts.
#
# Needs root, /dev/net/tun, linux.uml, nfs-kernel-server, nfs-common,
# kmod, iproute2.  Exits 2, saying why, where it cannot run; 1 on a
# failed check; bounded by $MSGSPOOL_NFS_TIMEOUT seconds (default 600).
set -u
MODE=${1:-chaos}
top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build/}
LEASE=${MSGSPOOL_NFS_LEASE:-15}
PER_WRITER=${MSGSPOOL_NFS_MESSAGES:-150}
LIMIT=${MSGSPOOL_NFS_TIMEOUT:-600}
CGI=$top/${O}cgi-bin/sms-deliver
MSGCGI=$top/${O}cgi-bin/messages
RECEIPTS=$top/${O}cgi-bin/receipts
CLI=$top/${O}spooler/msgspool
DAEMON=$top/${O}spooler/msgspoold
here=$top/tests/nfs

skip() { echo "SKIP check-nfs: $*"; exit 2; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespace, tap devices)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
for c in linux.uml ip modprobe rpc.nfsd exportfs mount.nfs4 rpcbind; do
	command -v "$c" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
	command -v "$c" >/dev/null 2>&1 ||
	    skip "no $c (apt-get install user-mode-linux nfs-kernel-server nfs-common kmod iproute2)"
done
moddir=$(ls -d /usr/lib/uml/modules/* 2>/dev/null | head -n 1)
[ -n "$moddir" ] || skip "no /usr/lib/uml/modules (user-mode-linux)"
[ -x "$CGI" ] && [ -x "$RECEIPTS" ] && [ -x "$CLI" ] && [ -x "$DAEMON" ] ||
    skip "build first (make build)"
# Measured: an AddressSanitizer program aborts under user-mode Linux (its
# shadow memory does not fit the guest's address space).
for b in "$CGI" "$DAEMON"; do
	grep -qa __asan_init "$b" &&
	    skip "$b is a sanitizer build: AddressSanitizer cannot run under user-mode Linux (its shadow memory does not fit there); make check-nfs tests the plain build"
done

EXP=$(mktemp -d /tmp/msgspool-nfs.XXXXXX)
NS=msgspool-nfs-$$
UMID=msn$$
mkdir -p "$EXP/ctl" "$EXP/log" "$EXP/mnt" "$EXP/out" "$EXP/acc" \
    "$EXP/conf" "$EXP/final" "$EXP/modroot/lib/modules"
ln -s "$moddir" "$EXP/modroot/lib/modules/"
ip netns add "$NS" 2>/dev/null || skip "cannot make a network namespace"
T0=$(date +%s)
ok=0

hosts_alive() { # whether a kernel's process group is still there
	local p
	for p in "$EXP"/ctl/*.pid; do
		[ -e "$p" ] && kill -0 -- -"$(cat "$p")" 2>/dev/null && return 0
	done
	return 1
}
cleanup() {
	trap - EXIT INT TERM
	touch "$EXP/ctl/stop"
	for p in "$EXP"/ctl/*.pid; do
		[ -e "$p" ] && kill -9 -- -"$(cat "$p")" 2>/dev/null
	done
	# Until the kernels are gone (their taps with them), 10 s at most.
	local i=0
	while [ $i -lt 100 ] && hosts_alive; do
		sleep 0.1; i=$((i + 1))
	done
	ip netns del "$NS" 2>/dev/null
	rm -rf "$HOME/.uml/$UMID"-*
	if [ "$ok" = 1 ] && [ -z "${MSGSPOOL_NFS_KEEP:-}" ]; then
		rm -rf "$EXP"
	else
		echo "check-nfs: logs kept in $EXP"
	fi
}
trap cleanup EXIT
trap 'echo "check-nfs: interrupted"; exit 1' INT TERM

say() { printf '[%4ds] %s\n' $(( $(date +%s) - T0 )) "$*"; }
fail() { say "FAIL: $*"; exit 1; }
left() { [ $(( $(date +%s) - T0 )) -lt "$LIMIT" ] || fail "over ${LIMIT}s"; }
waitfor() { # FILE SECONDS
	waituntil "$2" test -e "$1"
}
waituntil() { # SECONDS COMMAND...: 0 once COMMAND succeeds, polled
	local i=0 n=$(($1 * 4))
	shift
	until "$@"; do
		sleep 0.25; i=$((i + 1)); left
		[ $i -ge $n ] && return 1
	done
	return 0
}

ip netns exec "$NS" sh -c 'ip link set lo up && ip link add br0 type bridge &&
    ip link set br0 up && for t in tapS tap1 tap2 tap3; do
    ip tuntap add $t mode tap && ip link set $t master br0 &&
    ip link set $t up || exit 1; done' || skip "cannot make tap devices"

boot() { # ROLE TAP IP
	rm -f "$EXP/ctl/$1.ready"
	ip netns exec "$NS" setsid linux.uml mem=192M rootfstype=hostfs \
	    rootflags=/ rw con=null con0=fd:0,fd:1 umid="$UMID-$1" \
	    "vec0:transport=tap,ifname=$2" init="$here/uml-init.sh" \
	    exp="$EXP" role="$1" ip4="$3" lease="$LEASE" </dev/null \
	    >>"$EXP/log/$1.uml.log" 2>&1 &
	echo $! >"$EXP/ctl/$1.pid"
	disown $!
}
killhost() { kill -9 -- -"$(cat "$EXP/ctl/$1.pid")" 2>/dev/null; }

# Run a shell snippet on a client (in the background there); NAME.out
# gets its output.  cmd ROLE NAME SCRIPT
cmd() {
	mkdir -p "$EXP/ctl/$1"
	printf '%s\n' "$3" >"$EXP/ctl/$1/$2.tmp"
	mv "$EXP/ctl/$1/$2.tmp" "$EXP/ctl/$1/$2.cmd"
}
# Run and wait for it to end: on ROLE NAME SECONDS SCRIPT
on() {
	cmd "$1" "$2" "$4; touch $EXP/ctl/$1/$2.end"
	waitfor "$EXP/ctl/$1/$2.end" "$3" || fail "$1: $2 took over $3 s"
}

# The key the writers use, and the config of each daemon instance.
KEY=nfs-check-key-0123456789
printf 'acme:%s:*\n' "$(printf %s "$KEY" | sha256sum | cut -d' ' -f1)" \
    >"$EXP/keys"
# acme's number, whose inbound messages the http provider posts signed
# with this secret, and acme's reply to a stop.
ACME_NUMBER=+15005550006
KW_SECRET=whsec_$(printf 'keywords on a shared spool, 24+' | base64)
STOP_REPLY="NFS check: no more messages to this number."
n_inst=0
# A daemon on ROLE, instance INST: its own outbox and log.
daemon_start() { # ROLE
	n_inst=$((n_inst + 1))
	local inst=$1-d$n_inst
	mkdir -p "$EXP/out/$inst"
	cat >"$EXP/conf/$inst.conf" <<CONF
spool = $EXP/mnt/$1/spool
keys = $EXP/keys
concurrency = 8
[sms]
provider = file
dir = $EXP/out/$inst
[client.acme]
inbound = $ACME_NUMBER
stop-reply = $STOP_REPLY
CONF
	echo "$inst" >>"$EXP/ctl/instances"
	echo "$inst" >"$EXP/ctl/$1.daemon"
	cmd "$1" "$inst" "echo \$\$ >$EXP/ctl/$1/daemon.pid; exec $DAEMON -c $EXP/conf/$inst.conf >>$EXP/log/$inst.log 2>&1"
}
daemon_kill() { # ROLE: kill -9, the instance marked as killed
	cat "$EXP/ctl/$1.daemon" >>"$EXP/ctl/chaos"
	on "$1" "kill$n_inst" 10 "kill -9 \$(cat $EXP/ctl/$1/daemon.pid)"
}
daemon_stop() { # ROLE: a clean stop (SIGTERM), waited for
	on "$1" "stop$n_inst-$RANDOM" 30 "p=\$(cat $EXP/ctl/$1/daemon.pid); kill \$p; i=0; while kill -0 \$p 2>/dev/null && [ \$i -lt 150 ]; do sleep 0.2; i=\$((i + 1)); done"
}
# The daemon instance now on ROLE: started (its log says so); how many
# messages it has sent (files in its outbox); whether at least N.
started() { # ROLE
	grep -q "started:" "$EXP/log/$(cat "$EXP/ctl/$1.daemon").log" 2>/dev/null
}
sent_by() { # ROLE
	find "$EXP/out/$(cat "$EXP/ctl/$1.daemon")" -maxdepth 1 -type f \
	    ! -name '.*' 2>/dev/null | wc -l
}
has_sent() { # ROLE N
	[ "$(sent_by "$1")" -ge "$2" ]
}
# A writer on ROLE: N messages through sms-deliver as a CGI program.
writer() { # ROLE NAME N
	cmd "$1" "$2" "export MSGSPOOL_CONFIG=$EXP/conf/$1.cgi.conf
i=0; while [ \$i -lt $3 ] && [ ! -e $EXP/ctl/writers-stop ]; do
  i=\$((i + 1))
  b='{\"recipient\":\"+49151'\$(printf %07d \$i)'\",\"messageBody\":\"m '\$i' of $2\"}'
  r=\$(printf %s \"\$b\" | env -i MSGSPOOL_CONFIG=$EXP/conf/$1.cgi.conf REQUEST_METHOD=POST CONTENT_TYPE=application/json CONTENT_LENGTH=\${#b} HTTP_X_API_KEY=$KEY SCRIPT_NAME=/sms/v1/deliver SERVER_PROTOCOL=HTTP/1.1 $CGI 2>>$EXP/log/$2.err)
  case \$r in *'Status: 202'*) echo \"\$r\" | sed -n 's/.*\"smsId\":\"\\([0-9A-Z]*\\)\".*/\\1/p' >>$EXP/acc/$2.txt ;;
  *) echo \"\$r\" | head -n 1 >>$EXP/log/$2.refused ;; esac
done; touch $EXP/ctl/$2.done"
	echo "$2" >>"$EXP/ctl/writers"
}
cgi_conf() { # ROLE
	printf 'spool = %s\nkeys = %s\n' "$EXP/mnt/$1/spool" "$EXP/keys" \
	    >"$EXP/conf/$1.cgi.conf"
	# The receipts program's: an http provider's signed inbound messages.
	printf '[sms]\nprovider = http\nurl = http://127.0.0.1:9/\nreceipt-secret = %s\n[client.acme]\ninbound = %s\n' \
	    "$KW_SECRET" "$ACME_NUMBER" >>"$EXP/conf/$1.cgi.conf"
}
# POST a JSON body to a CGI program on ROLE (tests/nfs/cgi-post.sh);
# its answer in $EXP/ctl/NAME.answer.
# post ROLE NAME PROGRAM SCRIPT_NAME PATH_INFO BODY [VAR=VALUE ...]
post() {
	local role=$1 name=$2 prog=$3 script=$4 info=$5 body=$6
	shift 6
	printf '%s' "$body" >"$EXP/ctl/$name.body"
	on "$role" "$name" 30 "sh $here/cgi-post.sh $EXP/conf/$role.cgi.conf $prog $script '$info' $* <$EXP/ctl/$name.body >$EXP/ctl/$name.answer 2>>$EXP/log/$name.err"
}
# An SMS to NUMBER through sms-deliver on ROLE, sendAt AT when given.
# sms ROLE NAME NUMBER [AT]
sms() {
	local at=
	[ -n "${4:-}" ] && at=",\"sendAt\":\"$4\""
	post "$1" "$2" "$CGI" /sms/v1/deliver "" \
	    "{\"recipient\":\"$3\",\"messageBody\":\"$2\"$at}" \
	    HTTP_X_API_KEY=$KEY
}
answered() { # NAME STATUS: whether NAME's answer had that status
	head -n 1 "$EXP/ctl/$1.answer" 2>/dev/null | grep -q "^Status: $2 "
}
smsid() { # NAME: the id an answer gave, a line
	printf '%s\n' "$(sed -n 's/.*"smsId":"\([0-9A-Z]*\)".*/\1/p' \
	    "$EXP/ctl/$1.answer")"
}
# A file or a text under the server's spool, polled there (its own disk)
# for at most SECONDS: on_server NAME SECONDS TEST (a shell test).
on_server() {
	on S "$1" $(($2 + 10)) "i=0; until $3; do i=\$((i + 1)); [ \$i -ge $(($2 * 4)) ] && exit 1; sleep 0.25; done; touch $EXP/ctl/$1.found"
	[ -e "$EXP/ctl/$1.found" ]
}
# The spool's states, read on the server (its own disk: no client is
# slowed down by it), into $EXP/final/STATE.
snapshot() {
	on S "snap$RANDOM" 60 "for s in tmp new deferred cur sent failed claims; do ls -A $EXP/srv/spool/\$s >$EXP/final/\$s 2>/dev/null; done"
}
count() { grep -c -v '^\.' "$EXP/final/$1" 2>/dev/null || true; }
netcut() { ip netns exec "$NS" ip link set "tap${1#C}" nomaster; }
netjoin() { ip netns exec "$NS" ip link set "tap${1#C}" master br0; }

say "booting the NFS server (lease ${LEASE}s) and clients C1 C2 C3"
boot S tapS 10.99.0.1
waitfor "$EXP/ctl/S.ready" 120 || fail "server did not start (log/S.*)"
boot C1 tap1 10.99.0.11
boot C2 tap2 10.99.0.12
boot C3 tap3 10.99.0.13
for c in C1 C2 C3; do
	waitfor "$EXP/ctl/$c.ready" 180 || fail "$c did not mount"
	cgi_conf "$c"
done
say "mounted: $(sed -n 's/.*mounted at [0-9.]*: [^ ]* [^ ]* \(nfs4 [^ ]*\).*/\1/p' "$EXP/log/C1.console.log" | cut -c1-60)"
on C1 mkspool 30 "mkdir -p $EXP/mnt/C1/spool && for d in tmp new deferred cur sent failed; do mkdir -p $EXP/mnt/C1/spool/\$d; done"

# A server that just started is in its grace period (as long as its
# lease), when lock calls wait: start once a lock is taken at once, as
# on a server that has been up for a while.
graced=$(date +%s)
on C1 grace $((LEASE * 3 + 30)) "touch $EXP/mnt/C1/spool/.grace && flock -n $EXP/mnt/C1/spool/.grace true"
say "grace period over after $(( $(date +%s) - graced )) s: a lock is taken at once"

# A daemon refuses a mount that is not safe for several hosts.
on C1 nolock 30 "mkdir -p $EXP/mnt/C1-v3 && mount -t nfs -o vers=4.0,hard 10.99.0.1:/ $EXP/mnt/C1-v3 && printf 'spool = $EXP/mnt/C1-v3/spool\n' >$EXP/conf/v3.conf && $DAEMON -c $EXP/conf/v3.conf --once >$EXP/log/v3.log 2>&1; echo \$? >$EXP/ctl/v3.rc; umount $EXP/mnt/C1-v3"
[ "$(cat "$EXP/ctl/v3.rc")" = 1 ] && grep -q "NFS version 4.0" "$EXP/log/v3.log" ||
    fail "msgspoold started on an NFS 4.0 mount: $(cat "$EXP/log/v3.log")"
say "ok: msgspoold refuses vers=4.0: $(grep -o 'is NFS version 4.0[^;]*' "$EXP/log/v3.log" | cut -c1-70)"

drain() { # SECONDS: wait until new/ cur/ tmp/ are empty
	local i=0
	while :; do
		snapshot
		[ "$(count new)" = 0 ] && [ "$(count cur)" = 0 ] &&
		    [ "$(count tmp)" = 0 ] && return 0
		i=$((i + 1)); [ $i -ge "$1" ] && return 1
		sleep 1
	done
}

if [ "$MODE" = throughput ]; then
	# The daemons are started first and stopped (SIGSTOP) while the
	# spool fills, so the figure is the drain alone, not their start.
	N=${MSGSPOOL_NFS_MESSAGES:-600}
	for k in 1 2 3; do
		say "throughput: $N messages queued by C1 C2 C3, drained by $k daemon host(s)"
		for c in C1 C2 C3; do [ ${c#C} -le $k ] && daemon_start "$c"; done
		for c in C1 C2 C3; do [ ${c#C} -le $k ] && { waituntil 60 started "$c" ||
		    fail "$c: its daemon did not start within 60 s"; }; done
		for c in C1 C2 C3; do [ ${c#C} -le $k ] &&
		    on "$c" "stop$k" 10 "kill -STOP \$(cat $EXP/ctl/$c/daemon.pid)"; done
		for c in C1 C2 C3; do writer "$c" "w$k$c" $((N / 3)); done
		for c in C1 C2 C3; do waitfor "$EXP/ctl/w$k$c.done" 400 || fail "writer w$k$c"; done
		acc=$(cat "$EXP"/acc/w$k*.txt | wc -l)
		start=$(date +%s.%N)
		for c in C1 C2 C3; do [ ${c#C} -le $k ] &&
		    cmd "$c" "cont$k" "kill -CONT \$(cat $EXP/ctl/$c/daemon.pid)"; done
		# Polled on the server: the end is late by the poll, about 1 s.
		drain 300 || fail "not drained"
		end=$(date +%s.%N)
		for c in C1 C2 C3; do [ ${c#C} -le $k ] && daemon_stop "$c"; done
		rate=$(echo "$acc $start $end" | awk '{ printf "%.0f", $1 / ($3 - $2) }')
		secs=$(echo "$start $end" | awk '{ printf "%.1f", $2 - $1 }')
		say "throughput: $k host(s): $acc messages in $secs s: $rate/s"
		echo "$k $acc $secs $rate" >>"$EXP/throughput"
	done
	cat "$EXP/throughput"
	ok=1
	exit 0
fi

# chaos
say "load: $PER_WRITER messages from a writer on each client; a daemon on each"
for c in C1 C2 C3; do daemon_start "$c"; done
for c in C1 C2 C3; do writer "$c" "w1$c" "$PER_WRITER"; done
# The load under way (every daemon sending), then the chaos.  Its
# sleeps are its schedule, not waits: how long the load runs before and
# between two blows, how long a daemon stays dead, the lease outlived.
for c in C1 C2 C3; do
	waituntil 60 has_sent "$c" 5 || fail "$c: its daemon sent nothing within 60 s"
done
sleep 4
say "chaos: kill -9 of C1's daemon, restarted at once (takes its own claims back)"
daemon_kill C1; daemon_start C1
sleep 4
say "chaos: kill -9 of C2's daemon, restarted 3 s later"
daemon_kill C2; sleep 3; daemon_start C2
sleep 4
say "chaos: C3's kernel killed (its daemon and writer with it)"
cat "$EXP/ctl/C3.daemon" >>"$EXP/ctl/chaos"
killhost C3
sleep $((LEASE + 8))	# past its lease: the server lets its locks go
say "chaos: C3 booted again: a writer and a daemon on it"
boot C3 tap3 10.99.0.13
waitfor "$EXP/ctl/C3.ready" 180 || fail "C3 did not come back"
daemon_start C3
writer C3 w2C3 $((PER_WRITER / 3))
sleep 3
# C2's daemon alone for a moment, so that it holds claims when cut off.
for c in C1 C3; do
	on "$c" "pause$c" 10 "kill -STOP \$(cat $EXP/ctl/$c/daemon.pid)"
done
writer C1 w2C1 $((PER_WRITER / 3))
sleep 4
say "chaos: C2 cut off for $((LEASE + 12)) s (the lease is $LEASE s) while it holds claims"
cat "$EXP/ctl/C2.daemon" >>"$EXP/ctl/chaos"
echo "$(cat "$EXP/ctl/C2.daemon")" >"$EXP/ctl/partitioned"
netcut C2
for c in C1 C3; do
	on "$c" "resume$c" 10 "kill -CONT \$(cat $EXP/ctl/$c/daemon.pid)"
done
sleep $((LEASE + 12))	# a partition longer than the lease
netjoin C2
say "chaos: C2 back; waiting for the writers"
for w in $(cat "$EXP/ctl/writers"); do
	[ "$w" = w1C3 ] && continue	# died with its kernel
	waitfor "$EXP/ctl/$w.done" 300 || fail "writer $w did not finish"
done
say "draining"
drain 120 || fail "new/ cur/ tmp/ not empty after 120 s: new $(count new) cur $(count cur) tmp $(count tmp) ($(head -c 300 "$EXP/final/tmp"))"

# Keywords.  Before the STOP, acme's sms list exists (another number
# suppressed) and C2 and C3 have looked the number up, accepting a
# message to it each (sent, or failed if still queued when the STOP
# acts), C2 one scheduled 15 s on: a host's cached "no such file" is
# what the STOP must get past.
STOPNUM=+4915199999999
say "keywords: a STOP of $STOPNUM through C1's receipts program; sends to it from C2 and C3"
on C3 kwsup 30 "$CLI -c $EXP/conf/C3.cgi.conf suppress add acme sms +4915199999990 >$EXP/log/kwsup.log 2>&1"
sms C2 kwbefore2 "$STOPNUM"
sms C3 kwbefore3 "$STOPNUM"
sms C2 kwsched "$STOPNUM" "$(date -u -d @$(( $(date +%s) + 15 )) +%Y-%m-%dT%H:%M:%SZ)"
answered kwbefore2 202 && answered kwbefore3 202 && answered kwsched 200 ||
    fail "sends to $STOPNUM before the STOP: $(head -qn 1 "$EXP"/ctl/kwbefore2.answer "$EXP"/ctl/kwbefore3.answer "$EXP"/ctl/kwsched.answer | tr '\n' ' ')"
for n in kwbefore2 kwbefore3 kwsched; do smsid $n; done >"$EXP/acc/kw.txt"
sched=$(smsid kwsched)
ts=$(date +%s)
body='{"type":"inbound","from":"'$STOPNUM'","to":"'$ACME_NUMBER'","text":"Stop","id":"nfs-stop-1"}'
printf '%s' "$body" >"$EXP/ctl/kwstop.signed"
sig=$(python3 -c 'import base64, hashlib, hmac, sys
key = base64.b64decode(sys.argv[1][len("whsec_"):])
msg = b"kw-stop." + sys.argv[2].encode() + b"." + open(sys.argv[3], "rb").read()
print("v1," + base64.b64encode(hmac.new(key, msg, hashlib.sha256).digest()).decode())' \
    "$KW_SECRET" "$ts" "$EXP/ctl/kwstop.signed")
post C1 kwstop "$RECEIPTS" /receipts /http "$body" HTTP_WEBHOOK_ID=kw-stop \
    HTTP_WEBHOOK_TIMESTAMP="$ts" HTTP_WEBHOOK_SIGNATURE="$sig"
grep -q '"received":1' "$EXP/ctl/kwstop.answer" ||
    fail "the STOP was not taken: $(head -c 300 "$EXP/ctl/kwstop.answer")"
on_server kwsuppressed 30 "grep -qs '\"source\": *\"stop\"' $EXP/srv/spool/suppressions/acme/sms/$STOPNUM.json" ||
    fail "no stop suppression of $STOPNUM on the server 30 s after the STOP"
say "keywords: $(grep -l "stop from $STOPNUM" "$EXP"/log/C*-d*.log | head -n 1 | xargs -r basename | sed 's/\.log$//'): $(cat "$EXP"/log/C*-d*.log | grep -o "inbound [0-9A-Z]*: stop from [^;]*" | head -n 1)"
# At once, on the two other hosts: refused, nothing queued.
sms C2 kwafter2 "$STOPNUM"
sms C3 kwafter3 "$STOPNUM"
answered kwafter2 422 && answered kwafter3 422 ||
    fail "a send to $STOPNUM after the STOP was not refused: C2 $(head -n 1 "$EXP/ctl/kwafter2.answer"), C3 $(head -n 1 "$EXP/ctl/kwafter3.answer")"
say "ok: after the STOP, C2 and C3 refuse a send to it: $(head -n 1 "$EXP/ctl/kwafter3.answer")"
# The scheduled one, once due, fails suppressed wherever it is claimed;
# the confirmation is sent, once, although the number is suppressed.
on_server kwfailed 90 "grep -qs '\"code\": *\"suppressed\"' $EXP/srv/spool/failed/$sched.json" ||
    fail "$sched, scheduled to $STOPNUM before the STOP, not failed suppressed within 90 s"
wait_reply() { [ "$(grep -rlF "$STOP_REPLY" "$EXP"/out | wc -l)" -ge 1 ]; }
waituntil 30 wait_reply || fail "the stop's confirmation was not sent within 30 s"
[ "$(grep -rlF "$STOP_REPLY" "$EXP"/out | wc -l)" = 1 ] ||
    fail "the stop's confirmation sent $(grep -rlF "$STOP_REPLY" "$EXP"/out | wc -l) times"
[ -z "$(find "$EXP/out" -name "$sched*")" ] || fail "$sched was sent"
# The reply is msgspoold's message, accepted from no writer.
grep -rlF "$STOP_REPLY" "$EXP"/out | sed 's|.*/||; s|\..*||' >"$EXP/ctl/replies"
say "ok: $sched, scheduled before the STOP, failed suppressed, never sent; the confirmation sent once, by $(grep -rlF "$STOP_REPLY" "$EXP"/out | sed "s|$EXP/out/||; s|/.*||")"
drain 60 || fail "new/ cur/ tmp/ not empty 60 s after the keywords"
for c in C1 C2 C3; do daemon_stop "$c"; done
snapshot

# acme's list (msgspool-spool(5), Lists), written by the programs of
# every host under kills and the partition, read page by page by GET
# /messages on C1 over NFS: into $EXP/ctl/list.pages, a page a line.
say "lists: acme's messages by GET /messages on C1, 100 a page"
on C1 listing 300 "after=; i=0; : >$EXP/ctl/list.pages
while :; do
  r=\$(env -i MSGSPOOL_CONFIG=$EXP/conf/C1.cgi.conf REQUEST_METHOD=GET QUERY_STRING=\"limit=100\${after:+&after=\$after}\" HTTP_X_API_KEY=$KEY SCRIPT_NAME=/messages REQUEST_URI=/messages SERVER_PROTOCOL=HTTP/1.1 $MSGCGI 2>>$EXP/log/listing.err)
  printf '%s\\n' \"\$r\" | sed -n '/^{/p' >>$EXP/ctl/list.pages
  after=\$(printf '%s' \"\$r\" | sed -n 's/.*\"next\":\"\\([0-9A-Z]*\\)\".*/\\1/p')
  i=\$((i + 1)); [ -n \"\$after\" ] && [ \$i -lt 1000 ] || break
done"

# The checks, over the ids, the states and the sends.
python3 - "$EXP" <<'PY' || exit 1
import os, sys, collections
exp = sys.argv[1]
def lines(p):
    try:
        return [l.strip() for l in open(p) if l.strip()]
    except FileNotFoundError:
        return []
accepted = set()
for f in os.listdir(f"{exp}/acc"):
    accepted.update(lines(f"{exp}/acc/{f}"))
where = collections.defaultdict(list)
for st in ("tmp", "new", "deferred", "cur", "sent", "failed"):
    for n in lines(f"{exp}/final/{st}"):
        if n.startswith("."):
            continue
        if st == "tmp":
            where["tmp:" + n].append(st)
        else:
            where[n.split(".")[0]].append(st)
chaos = set(lines(f"{exp}/ctl/chaos"))
cut = set(lines(f"{exp}/ctl/partitioned"))
sends = collections.defaultdict(list)
for inst in lines(f"{exp}/ctl/instances"):
    d = f"{exp}/out/{inst}"
    for n in os.listdir(d) if os.path.isdir(d) else []:
        if not n.startswith("."):
            sends[n.split(".")[0]].append(inst)
problems = []
final = collections.Counter()
for i in sorted(accepted):
    s = where.get(i, [])
    if len(s) != 1:
        problems.append(f"{i}: in {s or 'no state'}")
    elif s[0] not in ("sent", "failed"):
        problems.append(f"{i}: in {s[0]}, not a final state")
    final[s[0] if len(s) == 1 else "?"] += 1
for i, s in where.items():
    if len(s) > 1 or s[0] in ("tmp", "new", "cur"):
        if i not in accepted:
            problems.append(f"{i}: in {s}")
for i in accepted:
    if where.get(i) == ["sent"] and not sends.get(i):
        problems.append(f"{i}: in sent/ but never sent")
dup_kill = dup_part = 0
for i, insts in sends.items():
    if len(insts) < 2:
        continue
    # All but one send must come from a daemon killed or cut off.
    calm = [x for x in insts if x not in chaos]
    if len(calm) > 1:
        problems.append(f"{i}: sent by {insts}, more than one of them "
                        "neither killed nor cut off")
    elif any(x in cut for x in insts):
        dup_part += 1
    else:
        dup_kill += 1
replies = set(lines(f"{exp}/ctl/replies"))     # queued by msgspoold
unaccepted = [i for i in where if i not in accepted and i not in replies
              and not i.startswith("tmp:")]
print(f"accepted {len(accepted)}: sent {final['sent']}, failed "
      f"{final['failed']}, elsewhere {sum(final.values()) - final['sent'] - final['failed']}")
print(f"spooled but never answered (a writer killed mid-request): "
      f"{len(unaccepted)}, each in one final state")
print(f"sends {sum(len(v) for v in sends.values())} for {len(sends)} ids; "
      f"sent twice: {dup_kill} by a daemon killed holding it, "
      f"{dup_part} across the partition")
print("tmp/ new/ cur/ at the end: " + ", ".join(
    f"{st} {len([n for n in lines(f'{exp}/final/{st}') if not n.startswith('.')])}"
    for st in ("tmp", "new", "cur")))
# The list: every accepted message once, newest first, in the status
# its final state says.
import json
listed = collections.Counter()
status = {}
order = []
for line in lines(f"{exp}/ctl/list.pages"):
    for m in json.loads(line)["messages"]:
        listed[m["id"]] += 1
        status[m["id"]] = m.get("status")
        order.append(m["id"])
if order != sorted(order, reverse=True):
    problems.append("the list is not newest first")
for i in sorted(accepted):
    s = where.get(i, [])
    if listed[i] != 1:
        problems.append(f"{i}: listed {listed[i]} times")
    elif len(s) == 1 and s[0] == "sent" and status[i] not in (
            "sent", "delivered", "read", "undelivered"):
        problems.append(f"{i}: in sent/, listed {status[i]}")
    elif len(s) == 1 and s[0] == "failed" and status[i] not in (
            "failed", "canceled"):
        problems.append(f"{i}: in failed/, listed {status[i]}")
for i, n in listed.items():
    if n > 1 and i not in accepted:
        problems.append(f"{i}: listed {n} times")
print(f"listed {len(listed)} of acme's messages in "
      f"{len(lines(exp + '/ctl/list.pages'))} pages; every one of the "
      f"{len(accepted)} accepted once")
for p in problems[:20]:
    print("PROBLEM " + p)
if problems or not accepted:
    print(f"FAIL: {len(problems)} problems")
    sys.exit(1)
PY
for f in "$EXP"/log/*.refused; do
	[ -e "$f" ] && say "refused by a writer's CGI ($(basename "$f" .refused)): $(sort "$f" | uniq -c | tr '\n' ' ')"
done
# The cut-off daemon's loop went on: it said so while the server was away.
cut=$(cat "$EXP/ctl/partitioned")
grep -q "server has not answered" "$EXP/log/$cut.log" ||
    fail "$cut: its loop never said the server was away (stalled?)"
say "ok: $cut's loop ran on while cut off: $(grep -c 'server has not answered' "$EXP/log/$cut.log") time(s) it said the server was away, then: $(grep -m1 -o 'server answers again' "$EXP/log/$cut.log")"
say "claims lost and not recorded: $(cat "$EXP"/log/C*-d*.log | grep -c 'claim lost')"
say "dead claims recovered: $(cat "$EXP"/log/C*-d*.log | grep -c 'recovered .*outlived')"
say "ok: several hosts, one spool, under kills and a partition"
ok=1
