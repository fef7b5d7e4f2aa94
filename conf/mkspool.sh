#!/bin/sh
# mkspool.sh [-o USER] [-g GROUP] SPOOLDIR: the spool's directories, each
# with the mode msgspool-spool(5) gives it ("Owners and modes"); with -o
# and -g, owned by the daemon's user and the web server's group.  A
# directory that exists gets its mode (and owner) again; the files in it
# are not touched.  Run by make install and by the Debian package's
# postinst (installed as PREFIX/lib/msgspool/mkspool).
set -eu
own=
while getopts o:g: opt; do
	case $opt in
	o) own="$own -o $OPTARG" ;;
	g) own="$own -g $OPTARG" ;;
	*) echo "usage: mkspool [-o USER] [-g GROUP] SPOOLDIR" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: mkspool [-o USER] [-g GROUP] SPOOLDIR" >&2; exit 2; }
spool=$1

# The root: the daemon's, readable by the group.
install -d -m 0750 $own "$spool"
# The web server's group writes here (setgid, so every file is the
# group's): tmp/, new/ and deferred/ (queued messages), uploads/ and
# blobs/ (attachments), receipts/ and events/, rates/ (each client's
# rate), idempotency/ (keys), claims/, suppressions/ (each client's
# lists), inbox/, inbox-new/ and index/ (inbound messages), cur/ and
# failed/ (a client's cancel), lists/ (each client's messages), metrics/
# (GET /metrics' cache, the canceled count), sync/ (the group commit's
# record of each host).
for d in tmp new deferred uploads blobs receipts events rates \
    idempotency claims suppressions inbox inbox-new index cur failed \
    lists metrics sync; do
	install -d -m 2770 $own "$spool/$d"
done
# The daemon's, read by the group: sent/ (what became of a message).
for d in sent events-failed status inbox-parts; do
	install -d -m 2750 $own "$spool/$d"
done
# The daemon's alone.
install -d -m 0700 $own "$spool/outbox"
