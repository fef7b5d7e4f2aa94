/*
 * netfs.c: the mount a spool lives on, from /proc/self/mountinfo
 * (proc(5)), and the rules several hosts sharing one spool need
 * (msgspool-spool(5), Several hosts, one spool): NFS 4.1 or later (its
 * sessions run a rename exactly once; its locks live on the server and
 * are freed when their holder's lease ends), locks that reach the
 * server (no nolock, local_lock=none), and hard mounts (a soft one
 * turns a slow server into lost writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/netfs.h"
#include "base/util.h"

/* Filesystems other hosts see too: new work may come from them. */
static const char *const network_types[] = {
	"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs",
	"fuse.glusterfs", "fuse.sshfs", "fuse.s3fs", "afs", "lustre", "gfs2",
	"ocfs2", "beegfs", "fuse.cephfs", NULL
};

/* Copy a mountinfo field, undoing its octal escapes (\040 is a space). */
static void
unescape(char *dst, size_t len, const char *src, size_t n)
{
	size_t	i, j = 0;

	for (i = 0; i < n && j + 1 < len; i++) {
		if (src[i] == '\\' && i + 3 < n &&
		    src[i + 1] >= '0' && src[i + 1] <= '3' &&
		    src[i + 2] >= '0' && src[i + 2] <= '7' &&
		    src[i + 3] >= '0' && src[i + 3] <= '7') {
			dst[j++] = (char)((src[i + 1] - '0') * 64 +
			    (src[i + 2] - '0') * 8 + (src[i + 3] - '0'));
			i += 3;
		} else
			dst[j++] = src[i];
	}
	dst[j] = '\0';
}

/*
 * The value of option key in a comma-separated list (opts, n bytes):
 * "" for a flag, NULL when absent.  Copied into val.
 */
static const char *
opt_get(const char *opts, size_t n, const char *key, char *val,
    size_t vlen)
{
	const char	*p = opts, *end = opts + n, *c, *eq;
	size_t		 klen = strlen(key), l;

	while (p < end) {
		if ((c = memchr(p, ',', (size_t)(end - p))) == NULL)
			c = end;
		eq = memchr(p, '=', (size_t)(c - p));
		l = (size_t)((eq ? eq : c) - p);
		if (l == klen && memcmp(p, key, klen) == 0) {
			l = eq ? (size_t)(c - eq - 1) : 0;
			if (l >= vlen)
				l = vlen - 1;
			memcpy(val, eq ? eq + 1 : "", l);
			val[l] = '\0';
			return val;
		}
		p = c + 1;
	}
	return NULL;
}

/* The fields of one line; 0, or -1 when it is not a mountinfo line. */
struct line {
	const char	*f[6];		/* id .. mount options */
	size_t		 fl[6];
	const char	*type, *src, *sopts;
	size_t		 typel, srcl, soptsl;
};

static int
line_split(const char *p, const char *end, struct line *l)
{
	const char	*q;
	int		 i, sep = 0;

	memset(l, 0, sizeof(*l));
	for (i = 0; p < end; i++) {
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			break;
		if ((q = memchr(p, ' ', (size_t)(end - p))) == NULL)
			q = end;
		if (i < 6) {
			l->f[i] = p;
			l->fl[i] = (size_t)(q - p);
		} else if (!sep) {
			/* Optional fields end with a lone "-". */
			sep = q - p == 1 && *p == '-';
		} else if (l->type == NULL) {
			l->type = p;
			l->typel = (size_t)(q - p);
		} else if (l->src == NULL) {
			l->src = p;
			l->srcl = (size_t)(q - p);
		} else if (l->sopts == NULL) {
			l->sopts = p;
			l->soptsl = (size_t)(q - p);
		}
		p = q;
	}
	return l->sopts != NULL ? 0 : -1;
}

static int
judge(const struct line *l, struct netfs_mount *m, char *err, size_t errlen)
{
	char	 v[64] = "4.0";
	int	 i;

	unescape(m->fstype, sizeof(m->fstype), l->type, l->typel);
	unescape(m->source, sizeof(m->source), l->src, l->srcl);
	unescape(m->point, sizeof(m->point), l->f[4], l->fl[4]);
	for (i = 0; network_types[i] != NULL; i++)
		if (strcmp(m->fstype, network_types[i]) == 0)
			m->network = 1;
	m->nfs = strcmp(m->fstype, "nfs") == 0 ||
	    strcmp(m->fstype, "nfs4") == 0;
	if (!m->nfs)
		return 0;
	if (opt_get(l->sopts, l->soptsl, "vers", v, sizeof(v)) != NULL) {
		m->vers_major = atoi(v);
		m->vers_minor = strchr(v, '.') ? atoi(strchr(v, '.') + 1) : 0;
	} else if (strcmp(m->fstype, "nfs4") == 0)
		m->vers_major = 4;	/* said "4.0" when nothing is said */
	if (m->vers_major < 4 || (m->vers_major == 4 && m->vers_minor < 1)) {
		util_seterr(err, errlen, "%s on %s is NFS version %s: several "
		    "hosts need 4.1 or later (locks freed when a host dies, "
		    "renames run once); mount it with vers=4.2",
		    m->source, m->point, m->vers_major ? v : "not said");
		return -1;
	}
	if (opt_get(l->sopts, l->soptsl, "nolock", v, sizeof(v)) != NULL ||
	    opt_get(l->f[5], l->fl[5], "nolock", v, sizeof(v)) != NULL) {
		util_seterr(err, errlen, "%s on %s is mounted nolock: claims "
		    "would be locked on this host only", m->source, m->point);
		return -1;
	}
	if (opt_get(l->sopts, l->soptsl, "local_lock", v, sizeof(v)) !=
	    NULL && strcmp(v, "none") != 0) {
		util_seterr(err, errlen, "%s on %s is mounted local_lock=%s: "
		    "claims would be locked on this host only; mount it with "
		    "local_lock=none", m->source, m->point, v);
		return -1;
	}
	if (opt_get(l->sopts, l->soptsl, "soft", v, sizeof(v)) != NULL ||
	    opt_get(l->sopts, l->soptsl, "softerr", v, sizeof(v)) != NULL) {
		util_seterr(err, errlen, "%s on %s is a soft mount: a slow "
		    "server would lose writes the spool relies on; mount it "
		    "hard", m->source, m->point);
		return -1;
	}
	return 0;
}

int
netfs_check_text(const char *text, dev_t dev, struct netfs_mount *m,
    char *err, size_t errlen)
{
	struct line	 l, best;
	const char	*p = text, *nl;
	char		 devs[32];
	int		 found = 0, n;

	memset(&best, 0, sizeof(best));
	memset(m, 0, sizeof(*m));
	n = snprintf(devs, sizeof(devs), "%u:%u", major(dev), minor(dev));
	while (*p != '\0') {
		if ((nl = strchr(p, '\n')) == NULL)
			nl = p + strlen(p);
		if (line_split(p, nl, &l) == 0 && l.fl[2] == (size_t)n &&
		    memcmp(l.f[2], devs, (size_t)n) == 0) {
			best = l;
			found = 1;
		}
		p = *nl ? nl + 1 : nl;
	}
	if (!found) {
		util_seterr(err, errlen, "no mount of device %s in mountinfo",
		    devs);
		return -1;
	}
	return judge(&best, m, err, errlen);
}

int
netfs_check(const char *path, struct netfs_mount *m, char *err,
    size_t errlen)
{
	struct stat	 st;
	char		*text = NULL, *nt;
	size_t		 len = 0, cap = 0;
	ssize_t		 r;
	int		 fd, rc;

	memset(m, 0, sizeof(*m));
	if (stat(path, &st) == -1) {
		util_seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if ((fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)) ==
	    -1) {
		util_seterr(err, errlen, "/proc/self/mountinfo: %s",
		    strerror(errno));
		return -1;
	}
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 16384;
			if ((nt = realloc(text, cap)) == NULL) {
				free(text);
				close(fd);
				util_seterr(err, errlen, "out of memory");
				return -1;
			}
			text = nt;
		}
		if ((r = read(fd, text + len, cap - len - 1)) == -1 &&
		    errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (r == -1) {
		util_seterr(err, errlen, "/proc/self/mountinfo: %s",
		    strerror(errno));
		free(text);
		return -1;
	}
	text[len] = '\0';
	rc = netfs_check_text(text, st.st_dev, m, err, errlen);
	free(text);
	return rc;
}

char *
netfs_hostname(char *buf, size_t len)
{
	char	h[256];
	size_t	i, n;

	if (len == 0)
		return buf;
	if (gethostname(h, sizeof(h)) == -1 || h[0] == '\0')
		snprintf(h, sizeof(h), "localhost");
	h[sizeof(h) - 1] = '\0';
	n = strlen(h);
	if (n > NETFS_HOST_MAX)
		n = NETFS_HOST_MAX;
	if (n > len - 1)
		n = len - 1;
	for (i = 0; i < n; i++)
		buf[i] = (h[i] >= 'a' && h[i] <= 'z') ||
		    (h[i] >= 'A' && h[i] <= 'Z') ||
		    (h[i] >= '0' && h[i] <= '9') || h[i] == '-' ? h[i] : '_';
	buf[n] = '\0';
	return buf;
}
