/*
 * claim_owner.c: who holds a claim (msgspool-spool(5), claims/): its
 * owner's record, claims/NAME, written when a message is claimed and
 * removed when the claim ends; in a daemon a link to one file of its
 * own, so that a claim makes no file; the records of claims gone, and
 * the files of daemons gone, pruned.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/netfs.h"
#include "base/util.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

#define OWNER_PREFIX	".owner."

/* The text of a record: this host, this process, now. */
static int
owner_text(char *text, size_t len)
{
	char	host[NETFS_HOST_MAX + 1];

	return snprintf(text, len, "{\"host\": \"%s\", \"pid\": %ld, "
	    "\"since\": %lld}\n", netfs_hostname(host, sizeof(host)),
	    (long)getpid(), (long long)time(NULL));
}

/*
 * The file the records of this process link to (spool_claim_linked):
 * claims/.owner.HOST.PID, a name no record has (a dot).
 */
static void
owner_file(char *buf, size_t len)
{
	char	host[NETFS_HOST_MAX + 1];

	snprintf(buf, len, OWNER_PREFIX "%s.%ld", netfs_hostname(host,
	    sizeof(host)), (long)getpid());
}

/* Write text into afd/name, made or emptied first; its stat in *st. */
static int
owner_write(int afd, const char *name, const char *text, size_t n,
    struct stat *st)
{
	int	fd, rc = 0;

	if ((fd = openat(afd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) == -1)
		return -1;
	if (util_write_all(fd, text, n) == -1 || fstat(fd, st) == -1) {
		log_warn("spool: claims/%s: %s", name, strerror(errno));
		rc = -1;
	}
	close(fd);
	return rc;
}

/*
 * The record of claims/name as a link to the process's file, made when
 * it is missing: a link makes no new file (msgspool-spool(5), claims/).
 * A record left under name by a claim that died is replaced, never
 * written through.  -1 (EMLINK: too many) when it cannot be linked.
 */
static int
owner_link(struct spool *s, int afd, const char *name)
{
	struct stat	st;
	char		owner[NETFS_HOST_MAX + 32], text[128];
	int		tries, n;

	owner_file(owner, sizeof(owner));
	for (tries = 0; tries < 3; tries++) {
		if (linkat(afd, owner, afd, name, 0) == 0)
			return 0;
		if (errno == EEXIST) {
			unlinkat(afd, name, 0);
			continue;
		}
		if (errno != ENOENT)
			return -1;
		/* Not made yet, or pruned while no claim linked to it. */
		n = owner_text(text, sizeof(text));
		if (owner_write(afd, owner, text, (size_t)n, &st) == -1)
			return -1;
		s->owner_ino = st.st_ino;
	}
	return -1;
}

/*
 * Name the owner of a claim (host, pid, since) in claims/NAME: so a
 * restarted daemon knows its own, and an operator whose they are.  Not
 * synced: it informs, the lock decides.
 */
void
spool_owner_put(struct spool *s, const char *name)
{
	struct stat	st;
	char		text[128];
	int		afd, n;

	if ((afd = spool_area(s, SPOOL_CLAIMS_AREA, 1)) == -1)
		return;
	if (!s->owner_linked || owner_link(s, afd, name) == -1) {
		n = owner_text(text, sizeof(text));
		/* Unlinked first: it may be a link to another's file. */
		unlinkat(afd, name, 0);
		owner_write(afd, name, text, (size_t)n, &st);
	}
	close(afd);
}

void
spool_claim_linked(struct spool *s, int on)
{
	char	owner[NETFS_HOST_MAX + 32];
	int	afd;

	s->owner_linked = on;
	if (on || s->owner_ino == 0)
		return;
	/* Its claims have ended: the file they linked to goes too. */
	if ((afd = spool_area(s, SPOOL_CLAIMS_AREA, 0)) == -1)
		return;
	owner_file(owner, sizeof(owner));
	unlinkat(afd, owner, 0);
	close(afd);
	s->owner_ino = 0;
}

int
spool_claim_owner(struct spool *s, const char *name, char *host,
    size_t hostlen, long *pid)
{
	json_t	*o;
	int	 afd, fd;

	*pid = 0;
	util_seterr(host, hostlen, "?");
	if (strchr(name, '/') != NULL || name[0] == '.' ||
	    (afd = spool_area(s, SPOOL_CLAIMS_AREA, 0)) == -1)
		return -1;
	fd = util_open_regular(afd, name, 1);
	close(afd);
	if (fd == -1)
		return -1;
	o = msgdoc_loadfd(fd, 0, NULL);
	close(fd);
	if (!json_is_string(json_object_get(o, "host")) ||
	    !json_is_integer(json_object_get(o, "pid"))) {
		json_decref(o);
		return -1;
	}
	util_seterr(host, hostlen, "%s", json_string_value(json_object_get(o,
	    "host")));
	*pid = (long)json_integer_value(json_object_get(o, "pid"));
	json_decref(o);
	return 0;
}

void
spool_release(struct spool *s, const char *name, int fd)
{
	struct stat	st;
	char		host[NETFS_HOST_MAX + 1], mine[NETFS_HOST_MAX + 1];
	long		pid;
	int		afd;

	/* Only our own record: another may hold it since. */
	if (s->owner_ino != 0 && strchr(name, '/') == NULL && name[0] != '.' &&
	    (afd = spool_area(s, SPOOL_CLAIMS_AREA, 0)) != -1) {
		/* A link to our file: ours, no need to read it. */
		if (fstatat(afd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_ino == s->owner_ino) {
			unlinkat(afd, name, 0);
			close(afd);
			if (fd != -1)
				close(fd);
			return;
		}
		close(afd);
	}
	if (spool_claim_owner(s, name, host, sizeof(host), &pid) == 0 &&
	    pid == (long)getpid() && strcmp(host, netfs_hostname(mine,
	    sizeof(mine))) == 0 && (afd = spool_area(s, SPOOL_CLAIMS_AREA, 0)) !=
	    -1) {
		unlinkat(afd, name, 0);
		close(afd);
	}
	if (fd != -1)
		close(fd);
}

/*
 * Drop owner records of claims gone from cur/ for a minute, and the files
 * of other processes that no record links to any more (a daemon that
 * died: spool_claim_linked).
 */
void
spool_owners_prune(struct spool *s)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	time_t		 old = time(NULL) - 60;
	char		 mine[NETFS_HOST_MAX + 32];
	int		 afd, fd;

	if ((afd = spool_area(s, SPOOL_CLAIMS_AREA, 0)) == -1)
		return;
	if ((fd = dup(afd)) == -1 || (dir = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		close(afd);
		return;
	}
	owner_file(mine, sizeof(mine));
	while ((de = readdir(dir)) != NULL)
		if (strncmp(de->d_name, OWNER_PREFIX, strlen(OWNER_PREFIX)) ==
		    0 && strcmp(de->d_name, mine) != 0 && fstatat(afd,
		    de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_nlink == 1 &&
		    st.st_mtime < old)
			unlinkat(afd, de->d_name, 0);
		else if (ulid_prefix(de->d_name) && fstatat(afd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime < old &&
		    fstatat(spool_statefd(s, SPOOL_CUR), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 && errno == ENOENT)
			unlinkat(afd, de->d_name, 0);
	closedir(dir);
	close(afd);
}
