#!/bin/sh
# uml-init.sh: init (pid 1) of the user-mode Linux kernels of
# tests/nfs/run.sh.  The root filesystem is the host's own (hostfs), so
# every path is the host's; $EXP (the kernel command line's exp=) is
# the run's scratch directory.  role=S: the NFS server, exporting a
# tmpfs; role=C1..C3: a client mounting it, then running the commands
# the harness drops into $EXP/ctl/ROLE/ (NAME.cmd, run once in the
# background, renamed NAME.run) until $EXP/ctl/stop appears.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p"; }
EXP=$(arg exp) ROLE=$(arg role) IP=$(arg ip4) LEASE=$(arg lease)
VERS=$(arg nfsvers)
export EXP ROLE
exec >"$EXP/log/$ROLE.console.log" 2>&1
mount -t tmpfs tmpfs /run
mkdir -p /run/rpcbind /run/sendsigs.omit.d
mkdir -p /var/lib/nfs; mount -t tmpfs tmpfs /var/lib/nfs
mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak /var/lib/nfs/rpc_pipefs \
    /var/lib/nfs/v4recovery
touch /var/lib/nfs/etab /var/lib/nfs/rmtab
mount -t tmpfs tmpfs /root

hostname "$ROLE"
ip link set lo up
ip addr add "$IP/24" dev vec0
ip link set vec0 up
M="modprobe -d $EXP/modroot"
now() { date +%s.%N | cut -c1-14; }
# Power off; pid 1 must not exit meanwhile (a panic): the power-off
# ends the sleep.
finish() { sync; echo o >/proc/sysrq-trigger; sleep 10; }
# Run what the harness drops into $EXP/ctl/ROLE/ until it says stop.
commands() {
	mkdir -p "$EXP/ctl/$ROLE"
	touch "$EXP/ctl/$ROLE.ready"
	cd "$EXP/ctl/$ROLE" || finish
	while [ ! -e "$EXP/ctl/stop" ]; do
		for c in *.cmd; do
			[ -e "$c" ] || continue
			mv "$c" "${c%.cmd}.run"
			sh "${c%.cmd}.run" >"${c%.cmd}.out" 2>&1 </dev/null &
		done
		sleep 0.2
	done
	finish
}

if [ "$ROLE" = S ]; then
	$M nfsd; $M nfsv4
	mount -t nfsd nfsd /proc/fs/nfsd
	mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs
	echo "$LEASE" >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime	# its least
	rpcbind -w
	rpc.mountd
	rpc.nfsd 8
	mkdir -p "$EXP/srv"
	mount -t tmpfs -o size=256m tmpfs "$EXP/srv"
	exportfs -o rw,sync,no_root_squash,no_subtree_check,fsid=0 \
	    "10.99.0.0/24:$EXP/srv"
	echo "S: lease $(cat /proc/fs/nfsd/nfsv4leasetime) s, versions" \
	    "$(cat /proc/fs/nfsd/versions)"
	commands
fi

$M nfsv4
i=0
while [ ! -e "$EXP/ctl/S.ready" ]; do
	i=$((i + 1)); [ $i -gt 600 ] && { echo "$ROLE: no server"; finish; }
	sleep 0.2
done
MNT=$EXP/mnt/$ROLE
mkdir -p "$MNT"
i=0
until mount -t nfs4 -o "vers=${VERS:-4.2},hard" 10.99.0.1:/ "$MNT"; do
	i=$((i + 1)); [ $i -gt 30 ] && { echo "$ROLE: cannot mount"; finish; }
	sleep 1
done
echo "$ROLE: mounted at $(now): $(grep " $MNT " /proc/mounts)"
commands
