/*
 * netfs.h: what a spool on a network filesystem needs (msgspool-spool(5),
 * Several hosts, one spool): the mount it lives on, checked against the
 * options that keep several hosts safe, and names unique across hosts.
 */
#ifndef NETFS_H
#define NETFS_H

#include <stddef.h>
#include <sys/types.h>

#define NETFS_HOST_MAX	40	/* a host name in a file name, at most */

struct netfs_mount {
	char	fstype[32];	/* "nfs4", "ext4", ... */
	char	source[256];	/* "server:/export" */
	char	point[1024];	/* where it is mounted */
	int	network;	/* a filesystem other hosts share */
	int	nfs;		/* NFS, of any version */
	int	vers_major;	/* NFS version, 0 when not said */
	int	vers_minor;
};

/*
 * Find, in the text of /proc/self/mountinfo, the mount whose device is
 * dev (the last one listed wins, as the kernel stacks them) and check
 * it.  Returns 0 with m filled when a spool may live there, -1 with the
 * reason in err when it may not (NFS before 4.1, nolock, local_lock
 * other than none, soft or softerr) or no mount has that device (m is
 * still filled as far as known).
 */
int	netfs_check_text(const char *mountinfo, dev_t dev,
	    struct netfs_mount *m, char *err, size_t errlen);

/* netfs_check_text on /proc/self/mountinfo for the mount of path. */
int	netfs_check(const char *path, struct netfs_mount *m, char *err,
	    size_t errlen);

/*
 * This host's name for a file name: at most NETFS_HOST_MAX characters
 * of [A-Za-z0-9-], anything else '_' ("localhost" when it has none).
 * Returns buf.
 */
char	*netfs_hostname(char *buf, size_t len);

#endif
