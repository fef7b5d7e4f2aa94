#!/bin/sh
# check.sh DEB WORKDIR: make check-deb.  The package DEB installed with
# apt in a fresh Debian 12 root made by mmdebstrap from the distribution's
# mirror, run, upgraded, removed and purged (debian/README.Debian):
#  1. install: the user, the spool with its owners and modes, the config,
#     the keys file, the units enabled;
#  2. with lighttpd in the root and the snippet enabled, the README's
#     commands (a key, the first curl) queue an SMS; so does the curl
#     through Apache with its snippet and through nginx with its example
#     (and msgspool-fcgi); msgspoold --once as the package's user sends
#     them to spool/outbox/;
#  2b. booted with systemd (systemd-nspawn): msgspoold.service is active,
#     as msgspool, and sends at once what lighttpd queues, and what
#     nginx queues through msgspool-fcgi.socket and its service;
#  3. an upgrade to a higher version keeps an edited config and the
#     spool's messages;
#  4. remove keeps the config and the spool;
#  5. purge removes the config and the user, keeps the spool, and leaves
#     lighttpd's config whole.
# Each step prints its time.  The root's tarball is kept in WORKDIR
# (root-bookworm-PACKAGES.tar, made again after a week); the root is
# WORKDIR/root, made afresh each run.  Needs root (chroot, mounts,
# systemd-nspawn).
# The web servers run in a network namespace of their own, so that
# their ports (80 and 8080) are not the host's.
set -eu
[ $# -eq 2 ] || { echo "usage: check.sh DEB WORKDIR" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
	echo "check-deb: needs root (mmdebstrap, chroot, mounts)" >&2
	exit 1
fi
top=$(cd "$(dirname "$0")/../.." && pwd)
deb=$(realpath "$1")
mkdir -p "$2"
work=$(realpath "$2")
root=$work/root
# A fresh Debian 12 with the web servers (none enabled for msgspool).
pkgs=lighttpd,apache2,nginx,curl
tarball=$work/root-bookworm-$(echo "$pkgs" | tr , -).tar
mirror=${MSGSPOOL_DEB_MIRROR:-http://deb.debian.org/debian}
t0=$(date +%s.%N)
tstep=$t0

elapsed() { echo "$(date +%s.%N) $1" | awk '{ printf "%.1f", $1 - $2 }'; }
step() {
	[ "$tstep" = "$t0" ] || echo "check-deb:   ok ($(elapsed "$tstep") s)"
	tstep=$(date +%s.%N)
	echo "check-deb: [$(elapsed "$t0") s] $*"
}
fail() { echo "check-deb: FAIL: $*" >&2; exit 1; }
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }
apt_root() { in_root apt-get -q -y -o Dpkg::Use-Pty=0 "$@" >>"$work/apt.log" 2>&1 ||
    { tail -20 "$work/apt.log" >&2; fail "apt-get $*"; }; }
# mode OWNER:GROUP of a path in the root, as stat gives them.
stat_of() { in_root stat -c '%a %U:%G' "$1"; }
expect_stat() {
	got=$(stat_of "$1") || fail "$1: missing"
	[ "$got" = "$2" ] || fail "$1: $got, not $2"
}

umount_root() {
	for m in dev/pts dev proc; do
		mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"
	done
	return 0
}
trap 'umount_root' EXIT
trap 'umount_root; exit 1' INT TERM
umount_root
rm -rf "$root"
: >"$work/apt.log"

step "a Debian 12 root (mmdebstrap, with $pkgs)"
if [ -s "$tarball" ] && [ -n "$(find "$tarball" -mtime -7)" ]; then
	echo "check-deb:   the cached $tarball"
else
	rm -rf "$tarball" "$work/root-bookworm-new.tar"
	mmdebstrap --quiet --variant=important --include="$pkgs" \
	    bookworm "$work/root-bookworm-new.tar" "$mirror" >"$work/mmdebstrap.log" 2>&1 ||
	    { tail -20 "$work/mmdebstrap.log" >&2; fail mmdebstrap; }
	mv "$work/root-bookworm-new.tar" "$tarball"
fi
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No service starts (there is no systemd in a chroot; sysvinit scripts
# would start on the host's ports): policy-rc.d(8).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"

step "apt install ./$(basename "$deb")"
cp "$deb" "$root/tmp/"
apt_root update
apt_root install "/tmp/$(basename "$deb")"

step "the user, the spool, the config, the units"
pw=$(in_root getent passwd msgspool) || fail "no user msgspool"
gid=$(echo "$pw" | cut -d: -f4)
[ "$(in_root getent group "$gid" | cut -d: -f1)" = www-data ] ||
    fail "msgspool's group is not www-data: $pw"
expect_stat /var/spool/msgspool "750 msgspool:www-data"
for d in tmp new deferred cur failed uploads blobs receipts events rates \
    idempotency claims suppressions inbox inbox-new index lists metrics \
    sync; do
	expect_stat /var/spool/msgspool/$d "2770 msgspool:www-data"
done
for d in sent events-failed status inbox-parts; do
	expect_stat /var/spool/msgspool/$d "2750 msgspool:www-data"
done
expect_stat /var/spool/msgspool/outbox "700 msgspool:www-data"
expect_stat /etc/msgspool/msgspool.conf "644 root:root"
expect_stat /etc/msgspool/keys "640 root:www-data"
expect_stat /etc/msgspool/secrets "700 msgspool:root"
grep -q '^keys = /etc/msgspool/keys$' "$root/etc/msgspool/msgspool.conf" ||
    fail "msgspool.conf: keys not in /etc/msgspool"
for c in /etc/msgspool/msgspool.conf \
    /etc/lighttpd/conf-available/50-msgspool.conf \
    /etc/apache2/conf-available/msgspool.conf; do
	in_root dpkg-query -W -f='${Conffiles}\n' msgspool | grep -q " $c " ||
	    fail "$c is not a conffile"
done
for f in /usr/sbin/msgspoold /usr/sbin/msgspool-fcgi /usr/sbin/msgspool-bounce \
    /usr/bin/msgspool /usr/lib/cgi-bin/msgspool/sms-deliver \
    /usr/lib/cgi-bin/msgspool/ping; do
	[ -x "$root$f" ] || fail "$f: not there"
done
for u in msgspoold.service msgspool-fcgi.socket msgspool-fcgi.service; do
	[ -f "$root/lib/systemd/system/$u" ] || fail "$u: no unit"
done
[ -L "$root/etc/systemd/system/multi-user.target.wants/msgspoold.service" ] ||
    fail "msgspoold.service is not enabled"
grep -q '^User=msgspool$' "$root/lib/systemd/system/msgspoold.service" ||
    fail "msgspoold.service does not run as msgspool"
# The package's version, debian/changelog's, is the programs' too.
v=$(in_root dpkg-query -W -f='${Version}' msgspool)
[ "$(in_root msgspool --version)" = "msgspool $v" ] ||
    fail "msgspool --version: $(in_root msgspool --version), not $v"

step "lighttpd with the snippet: a key, the README's curl"
# The commands of debian/README.Debian, which README.md gives too.
enable='lighty-enable-mod msgspool'
keycmd='KEY=$(msgspool key add demo sms)'
curlcmd=$(sed -n '/^  curl -s -H "X-API-KEY: $KEY"/,/8080\/sms\/v1\/deliver$/p' \
    "$top/debian/README.Debian" | sed 's/^  //')
[ -n "$curlcmd" ] || fail "debian/README.Debian: no curl command"
for c in "$enable" "$keycmd"; do
	grep -qF "$c" "$top/debian/README.Debian" || fail "README.Debian lacks: $c"
	grep -qF "$c" "$top/README.md" || fail "README.md lacks: $c"
done
echo "$curlcmd" | while IFS= read -r l; do
	grep -qF "$l" "$top/README.md" || fail "README.md lacks: $l"
done
in_root sh -c "$enable" >/dev/null || fail "$enable"
in_root lighttpd -tt -f /etc/lighttpd/lighttpd.conf || fail "lighttpd -tt"
# Run in a network namespace of the root's own (lo only); WAITS waits
# until 8080 answers /ping (or, with "down", no longer does), bounded;
# NOROUTE checks that a path that is no route is a 404 problem.
cat >"$root/tmp/lib.sh" <<'SH'
set -eu
ip link set lo up
waits() {
	i=0
	while :; do
		if curl -sf -o /dev/null http://127.0.0.1:8080/ping; then
			[ "${1:-}" = down ] || return 0
		else
			[ "${1:-}" != down ] || return 0
		fi
		i=$((i + 1))
		[ $i -lt 150 ] || { echo "8080: still ${1:-not up}" >&2; exit 1; }
		sleep 0.1
	done
}
noroute() {
	r=$(curl -s -o /dev/null -w '%{http_code} %{content_type}' \
	    http://127.0.0.1:8080/no/such/route)
	[ "$r" = "404 application/problem+json" ] ||
	    { echo "$1: /no/such/route: $r" >&2; exit 1; }
}
SH
cat >"$root/tmp/lighttpd.sh" <<SH
. /tmp/lib.sh
lighttpd -f /etc/lighttpd/lighttpd.conf
trap 'kill \$(cat /run/lighttpd.pid)' EXIT
waits
noroute lighttpd
# Port 80, the rest of lighttpd, runs none of the programs.
[ "\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1/cgi-bin/msgspool/ping)" = 404 ] ||
    { echo "port 80 runs the programs" >&2; exit 1; }
$keycmd
printf '%s\n' "\$KEY" >/tmp/key
$curlcmd >/tmp/reply1
echo >>/tmp/reply1
$curlcmd >/tmp/reply2
SH
unshare --net chroot "$root" /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin sh /tmp/lighttpd.sh ||
    fail "the first message"
id_of() { sed -n 's/^{"smsId":"\([0-9A-Z]\{26\}\)","status":"Queued"}$/\1/p' \
    "$root/tmp/$1"; }
id1=$(id_of reply1)
[ -n "$id1" ] || fail "reply: $(cat "$root/tmp/reply1")"
id2=$(id_of reply2)
[ -f "$root/var/spool/msgspool/new/$id1.json" ] || fail "$id1 not in new/"

step "Apache with its snippet (a2enmod cgid, a2enconf msgspool): a send"
# The same curl with the key of the first step, to the same port.
cat >"$root/tmp/apache2.sh" <<SH
. /tmp/lib.sh
a2enmod -q cgid >/dev/null
a2enconf -q msgspool >/dev/null
apache2ctl configtest 2>/tmp/apache2.log ||
    { cat /tmp/apache2.log >&2; exit 1; }
apache2ctl start 2>>/tmp/apache2.log
trap 'apache2ctl stop 2>>/tmp/apache2.log' EXIT
waits
noroute apache2
KEY=\$(cat /tmp/key)
$curlcmd >/tmp/reply3
SH
unshare --net chroot "$root" /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin sh /tmp/apache2.sh ||
    fail "a send through Apache"
id3=$(id_of reply3)
[ -n "$id3" ] || fail "reply: $(cat "$root/tmp/reply3")"

step "nginx with the example, through msgspool-fcgi: a send"
# The socket unit's socket, made by msgspool-fcgi -s as www-data here
# (no systemd in a chroot).
cat >"$root/tmp/nginx.sh" <<SH
. /tmp/lib.sh
cp /usr/share/doc/msgspool/examples/nginx-msgspool.conf \
    /etc/nginx/sites-available/msgspool
ln -s ../sites-available/msgspool /etc/nginx/sites-enabled/msgspool
install -d -o root -g www-data -m 0775 /run/msgspool
runuser -u www-data -- msgspool-fcgi -s /run/msgspool/fcgi.sock -w 2 \
    2>/tmp/fcgi.log &
fcgi=\$!
nginx -t -q
nginx
trap 'nginx -s stop 2>/dev/null; { kill \$fcgi; wait \$fcgi; } 2>/dev/null || :' EXIT
waits
noroute nginx
KEY=\$(cat /tmp/key)
$curlcmd >/tmp/reply4
SH
unshare --net chroot "$root" /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin sh /tmp/nginx.sh ||
    fail "a send through nginx"
id4=$(id_of reply4)
[ -n "$id4" ] || fail "reply: $(cat "$root/tmp/reply4")"

step "msgspoold --once as msgspool: the messages to outbox/"
# One kept aside, to be queued for the upgrade.
mv "$root/var/spool/msgspool/new/$id2.json" "$root/tmp/"
in_root runuser -u msgspool -- msgspoold --once 2>"$work/msgspoold.log" ||
    { cat "$work/msgspoold.log" >&2; fail "msgspoold --once"; }
for id in $id1 $id3 $id4; do
	[ -f "$root/var/spool/msgspool/sent/$id.json" ] || fail "$id not in sent/"
	ls "$root/var/spool/msgspool/outbox/" | grep -q "^$id" ||
	    fail "$id not in outbox/"
done
echo "check-deb:   $id1 $id3 $id4 sent to outbox/"

step "booted with systemd: msgspoold.service sends what lighttpd, then nginx with msgspool-fcgi.socket queue"
# systemd-nspawn boots the root with a network of its own (lo alone);
# lighttpd (its snippet enabled above) and msgspoold start as the units
# say, Apache and nginx not at all (masked: they would take the ports).
in_root systemctl mask -q apache2.service nginx.service
systemd-nspawn -q -D "$root" --register=no --keep-unit --private-network \
    -b >"$work/boot.log" 2>&1 </dev/null &
nspawn=$!
stop_boot() {
	kill "$nspawn" 2>/dev/null || return 0
	i=0
	while kill -0 "$nspawn" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 300 ] || { kill -9 "$nspawn"; break; }
		sleep 0.1
	done
	wait "$nspawn" 2>/dev/null || :
}
trap 'stop_boot; umount_root' EXIT
umount "$root/proc" "$root/dev"
# The container's init (systemd, a child of systemd-nspawn once its
# outer child is gone), and a command in it.
init=
i=0
while [ -z "$init" ]; do
	init=$(pgrep -P "$nspawn" -x systemd | head -1) || :
	i=$((i + 1)); [ $i -lt 300 ] || fail "no container (boot.log: $work/boot.log)"
	sleep 0.1
done
in_boot() { nsenter -t "$init" -m -u -i -n -p -- /usr/bin/env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
i=0
until st=$(in_boot systemctl is-system-running 2>/dev/null) &&
    [ "$st" = running -o "$st" = degraded ]; do
	i=$((i + 1)); [ $i -lt 1200 ] || fail "boot: $st (boot.log: $work/boot.log)"
	sleep 0.1
done
[ "$st" = running ] || in_boot systemctl --failed --no-legend >&2
[ "$(in_boot systemctl is-active msgspoold.service)" = active ] ||
    fail "msgspoold.service: $(in_boot systemctl status msgspoold.service)"
[ "$(in_boot systemctl show -P User msgspoold.service)" = msgspool ] ||
    fail "msgspoold.service is not msgspool's"
# (The container's /tmp is its own: the files go by /var/tmp.)
cp "$root/tmp/lib.sh" "$root/tmp/key" "$root/var/tmp/"
cat >"$root/var/tmp/booted.sh" <<SH
set -eu
. /var/tmp/lib.sh
waits
KEY=\$(cat /var/tmp/key)
$curlcmd >/var/tmp/reply5
SH
in_boot sh /var/tmp/booted.sh || fail "a send through the booted lighttpd"
mv "$root/var/tmp/reply5" "$root/tmp/reply5"
id5=$(id_of reply5)
[ -n "$id5" ] || fail "reply: $(cat "$root/tmp/reply5")"
i=0
until ls "$root/var/spool/msgspool/outbox/" | grep -q "^$id5"; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "$id5: not sent by msgspoold.service"
	sleep 0.1
done
echo "check-deb:   $id5 sent by msgspoold.service ($st)"
# nginx's example (enabled above) through the socket units, in place of
# lighttpd: msgspool-fcgi.service starts on the first connection.
cat >"$root/var/tmp/fcgi.sh" <<SH
set -eu
. /var/tmp/lib.sh
systemctl stop lighttpd.service
waits down
systemctl unmask -q nginx.service
systemctl start msgspool-fcgi.socket nginx.service
waits
KEY=\$(cat /var/tmp/key)
$curlcmd >/var/tmp/reply6
systemctl is-active msgspool-fcgi.service
systemctl show -P User msgspool-fcgi.service
SH
fcgi=$(in_boot sh /var/tmp/fcgi.sh) || fail "a send through nginx and the socket units"
[ "$(echo $fcgi)" = "active www-data" ] || fail "msgspool-fcgi.service: $fcgi"
mv "$root/var/tmp/reply6" "$root/tmp/reply6"
id6=$(id_of reply6)
[ -n "$id6" ] || fail "reply: $(cat "$root/tmp/reply6")"
i=0
until ls "$root/var/spool/msgspool/outbox/" | grep -q "^$id6"; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "$id6: not sent by msgspoold.service"
	sleep 0.1
done
echo "check-deb:   $id6 queued by msgspool-fcgi.service (socket-activated) through nginx, sent"
stop_boot
trap 'umount_root' EXIT
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
# The message kept aside, queued again for the upgrade.
mv "$root/tmp/$id2.json" "$root/var/spool/msgspool/new/"

step "upgrade to a higher version: the edited config and the messages kept"
up=$work/up
rm -rf "$up" && mkdir -p "$up"
dpkg-deb -R "$deb" "$up/pkg"
v=$(sed -n 's/^Version: //p' "$up/pkg/DEBIAN/control")
sed -i "s/^Version: .*/Version: $v+checkdeb1/" "$up/pkg/DEBIAN/control"
dpkg-deb -b "$up/pkg" "$root/tmp/msgspool-up.deb" >/dev/null
echo 'max-age = 12h    # edited by check-deb' >>"$root/etc/msgspool/msgspool.conf"
apt_root install /tmp/msgspool-up.deb
[ "$(in_root dpkg-query -W -f='${Version}' msgspool)" = "$v+checkdeb1" ] ||
    fail "not upgraded"
grep -q 'edited by check-deb' "$root/etc/msgspool/msgspool.conf" ||
    fail "the edited config was replaced"
[ -f "$root/var/spool/msgspool/sent/$id1.json" ] &&
    [ -f "$root/var/spool/msgspool/new/$id2.json" ] || fail "messages lost"
in_root msgspool list | grep -q "$id2" || fail "msgspool list: no $id2"
in_root getent passwd msgspool >/dev/null || fail "user lost"

step "apt remove: the config and the spool kept"
apt_root remove msgspool
[ ! -e "$root/usr/sbin/msgspoold" ] || fail "msgspoold still there"
grep -q 'edited by check-deb' "$root/etc/msgspool/msgspool.conf" ||
    fail "the config is gone"
[ -s "$root/etc/msgspool/keys" ] || fail "the keys are gone"
[ -f "$root/var/spool/msgspool/sent/$id1.json" ] || fail "the spool is gone"

step "apt purge: the config and the user gone, the spool kept"
apt_root purge msgspool
[ ! -e "$root/etc/msgspool" ] || fail "/etc/msgspool is still there"
! in_root getent passwd msgspool >/dev/null || fail "the user is still there"
[ -f "$root/var/spool/msgspool/sent/$id1.json" ] &&
    [ -f "$root/var/spool/msgspool/new/$id2.json" ] || fail "the spool is gone"
in_root lighttpd -tt -f /etc/lighttpd/lighttpd.conf ||
    fail "lighttpd's config broken after the purge"

step "done"
umount_root
rm -rf "$root" "$up"
echo "check-deb: all steps passed in $(elapsed "$t0") s"
