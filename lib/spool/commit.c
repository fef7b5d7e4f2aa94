/*
 * commit.c: the spool's durable writes (msgspool-spool(5), Queueing):
 * each file written in tmp/ (unnamed, O_TMPFILE, where the file system
 * has it; else named, O_EXCL), its data synced, linked or renamed into
 * place, and each directory synced once for all the files of a commit,
 * and once for the host's other processes' too (dsync.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/netfs.h"
#include "base/util.h"
#include "spool/dsync.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

enum msg_status
spool_errno_status(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
	case EROFS:
	case EIO:
	case EAGAIN:
	case EINTR:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return MSG_TEMPFAIL;
	default:
		return MSG_PERMFAIL;
	}
}

#define COMMIT_CHUNK	64	/* files open at once while syncing */

/*
 * A file being written: its descriptor and, when it has one, its
 * temporary name.  Its name, the caller's, may be longer than a
 * message's (a suppression's is its address: suppress.h); the temporary
 * one takes at most its first SPOOL_NAME_MAX - 1 bytes, the rest being
 * unique anyway.  An unnamed file (O_TMPFILE) has tmp[0] '\0'.
 */
struct pending {
	char	tmp[SPOOL_NAME_MAX + SPOOL_ID_LEN + NETFS_HOST_MAX + 32];
	const char *name;
	int	fd;
	int	dirfd;
	time_t	mtime;
};

/* p's unique temporary name in tmp/: -1 when no id can be had. */
static int
tmp_name(struct pending *p)
{
	char	id[SPOOL_ID_LEN + 1], host[NETFS_HOST_MAX + 1];

	if (ulid_new(id) == -1)
		return -1;
	/*
	 * Unique even when a file is rewritten in place, and across the
	 * hosts that share a spool: their host name and pid, as maildir's.
	 */
	snprintf(p->tmp, sizeof(p->tmp), "%.*s.%s.%s.%ld",
	    SPOOL_NAME_MAX - 1, p->name, id,
	    netfs_hostname(host, sizeof(host)), (long)getpid());
	return 0;
}

/* The room a document's text starts with: an SMS's is about 1 KiB. */
#define DOC_ROOM	2047

/*
 * Write doc into tmp/, unnamed or under a unique name, without syncing.
 * MSG_OK with p filled (fd open), else the status with nothing left
 * behind.
 */
static enum msg_status
write_tmp(struct spool *s, const json_t *doc, struct pending *p)
{
	struct timespec	 times[2];
	struct buf	 b = { 0 };
	char		*text;
	size_t		 len;
	int		 e, tfd = -1;

	p->fd = -1;
	p->tmp[0] = '\0';
	/* The document and its newline in one write. */
	if (buf_reserve(&b, DOC_ROOM) == -1 || buf_json(&b, doc,
	    JSON_INDENT(2) | JSON_SORT_KEYS) == -1 || buf_putc(&b, '\n') == -1 ||
	    (text = buf_take(&b, &len)) == NULL) {
		buf_free(&b);
		return MSG_TEMPFAIL;
	}
	/* tmp/ by its path when no directory of it is open: no open for it. */
	if (spool_unnamed_ok(s) && (p->fd = s->fds[SPOOL_TMP] == -1 ?
	    openat(s->rootfd, "tmp", O_TMPFILE | O_WRONLY | O_CLOEXEC,
	    SPOOL_FILE_MODE) : openat(s->fds[SPOOL_TMP], ".", O_TMPFILE |
	    O_WRONLY | O_CLOEXEC, SPOOL_FILE_MODE)) == -1 &&
	    errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
		e = errno;
		free(text);
		log_err("spool: %s/tmp: %s", s->root, strerror(e));
		return spool_errno_status(e);
	}
	if (p->fd == -1 && (tfd = spool_statefd(s, SPOOL_TMP)) == -1) {
		e = errno;
		free(text);
		log_err("spool: %s/tmp: %s", s->root, strerror(e));
		return spool_errno_status(e);
	}
	if (p->fd == -1) {
		/* Not here (an NFS spool): named, as maildir's. */
		s->unnamed = -1;
		if (tmp_name(p) == -1) {
			free(text);
			return MSG_TEMPFAIL;
		}
		p->fd = openat(tfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, SPOOL_FILE_MODE);
	}
	if (p->fd == -1) {
		e = errno;
		free(text);
		log_err("spool: %s/tmp/%s: %s", s->root, p->tmp, strerror(e));
		p->tmp[0] = '\0';
		return spool_errno_status(e);
	}
	/* A deferred file's mtime is when it is due: a stat tells, no parse. */
	times[0].tv_sec = times[1].tv_sec = p->mtime;
	times[0].tv_nsec = times[1].tv_nsec = 0;
	if (util_write_all(p->fd, text, len) == -1 ||
	    (p->mtime > 0 && futimens(p->fd, times) == -1)) {
		e = errno;
		free(text);
		close(p->fd);
		p->fd = -1;
		if (p->tmp[0] != '\0')
			unlinkat(spool_statefd(s, SPOOL_TMP), p->tmp, 0);
		log_err("spool: %s/tmp/%s: %s", s->root, p->tmp, strerror(e));
		return spool_errno_status(e);
	}
	free(text);
	return MSG_OK;
}

/*
 * Put the unnamed file p into place: linked in as its name, or, where
 * that name is taken (a file rewritten in place), linked into tmp/ and
 * renamed over it.  0, or -1 with errno.
 */
static int
link_unnamed(struct spool *s, struct pending *p)
{
	int	tfd;

	if (spool_link_unnamed(s, p->fd, p->dirfd, p->name) == 0)
		return 0;
	/* tmp/ opened only now: a new file needs it not. */
	if (errno != EEXIST || (tfd = spool_statefd(s, SPOOL_TMP)) == -1 ||
	    tmp_name(p) == -1)
		return -1;
	if (spool_link_unnamed(s, p->fd, tfd, p->tmp) == -1) {
		p->tmp[0] = '\0';
		return -1;
	}
	return renameat(tfd, p->tmp, p->dirfd, p->name);
}

/*
 * Sync (unless the file system's sync did: fs), close and put one
 * written file into place; on failure remove it.
 */
static enum msg_status
finish_tmp(struct spool *s, struct pending *p, int fs)
{
	int	e, unnamed = p->tmp[0] == '\0';

	if (!fs && fsync(p->fd) == -1) {
		e = errno;
		close(p->fd);
		goto fail;
	}
	if (unnamed && link_unnamed(s, p) == -1) {
		e = errno;
		close(p->fd);
		goto fail;
	}
	if (close(p->fd) == -1) {
		e = errno;
		goto fail;
	}
	if (!unnamed && renameat(spool_statefd(s, SPOOL_TMP), p->tmp,
	    p->dirfd, p->name) == -1) {
		e = errno;
		goto fail;
	}
	return MSG_OK;
fail:
	if (p->tmp[0] != '\0')
		unlinkat(spool_statefd(s, SPOOL_TMP), p->tmp, 0);
	log_err("spool: %s/tmp/%s: %s", s->root, p->tmp[0] != '\0' ? p->tmp :
	    p->name, strerror(e));
	return spool_errno_status(e);
}

/*
 * Sync the directory dfd after renames into it: a state's directory by
 * group commit (dsync.h), shared with the host's other processes; any
 * other alone.
 */
static int
sync_dir(struct spool *s, int dfd)
{
	int	d;

	for (d = 0; d < SPOOL__MAX; d++)
		if (s->fds[d] == dfd)
			return spool_syncdir(s, d);
	return fsync(dfd);
}

/*
 * The file system's sync for the files of a chunk written (their
 * statuses st): on failure each is closed, removed and fails.
 */
static void
sync_written(struct spool *s, struct pending *p, enum msg_status *st,
    size_t n)
{
	size_t	j;
	int	e;

	for (j = 0; j < n && st[j] != MSG_OK; j++)
		continue;
	if (j == n || spool_syncfs(s) == 0)
		return;
	e = errno;
	log_err("spool: syncfs of %s: %s", s->root, strerror(e));
	for (j = 0; j < n; j++) {
		if (st[j] != MSG_OK)
			continue;
		close(p[j].fd);
		if (p[j].tmp[0] != '\0')
			unlinkat(spool_statefd(s, SPOOL_TMP), p[j].tmp, 0);
		st[j] = spool_errno_status(e);
	}
}

/*
 * The file system's sync for the names of a commit's files put into
 * place: on failure each is removed again and fails.
 */
static void
sync_renamed(struct spool *s, int *dirfds, const char **names,
    enum msg_status *st, size_t n)
{
	size_t	i;
	int	e;

	for (i = 0; i < n && st[i] != MSG_OK; i++)
		continue;
	FAULT("commit: before a directory sync");
	if (i == n || spool_syncfs(s) == 0)
		return;
	e = errno;
	log_err("spool: syncfs of %s: %s", s->root, strerror(e));
	for (; i < n; i++)
		if (st[i] == MSG_OK) {
			unlinkat(dirfds[i], names[i], 0);
			st[i] = spool_errno_status(e);
		}
}

/*
 * Write docs durably: the engine of spool_commit and of the uploads.
 * dirfds[i] is where item i goes; names[i] its name.  Directories are
 * synced once each, after every rename; an item whose directory cannot
 * be synced is removed again and fails.
 */
void
spool_commit_files(struct spool *s, const json_t **docs, int *dirfds,
    const char **names, time_t *mtimes, enum msg_status *st, size_t n)
{
	struct pending	 p[COMMIT_CHUNK];
	size_t		 i, j, k, chunk;
	int		 synced[8], nsynced = 0, d, e;
	/* Many files: the file system synced for all (msgspool.conf(5)). */
	int		 fs = s->sync == SPOOL_SYNC_FS && n >= SPOOL_SYNCFS_MIN;

	for (i = 0; i < n; i += chunk) {
		chunk = n - i < COMMIT_CHUNK ? n - i : COMMIT_CHUNK;
		/* Write them all, then sync: the first sync commits the
		 * journal for the others too. */
		for (j = 0; j < chunk; j++) {
			p[j].name = names[i + j];
			p[j].dirfd = dirfds[i + j];
			p[j].mtime = mtimes[i + j];
			st[i + j] = p[j].dirfd == -1 ? MSG_TEMPFAIL :
			    write_tmp(s, docs[i + j], &p[j]);
			FAULT("commit: written");
		}
		if (fs)
			sync_written(s, p, st + i, chunk);
		for (j = 0; j < chunk; j++)
			if (st[i + j] == MSG_OK) {
				st[i + j] = finish_tmp(s, &p[j], fs);
				FAULT("commit: synced and renamed");
			}
	}
	/* The renames are durable once their directories are. */
	if (fs) {
		sync_renamed(s, dirfds, names, st, n);
		return;
	}
	for (i = 0; i < n; i++) {
		if (st[i] != MSG_OK)
			continue;
		for (k = 0; k < (size_t)nsynced; k++)
			if (synced[k] == dirfds[i])
				break;
		if (k < (size_t)nsynced)
			continue;
		d = dirfds[i];
		FAULT("commit: before a directory sync");
		if (sync_dir(s, d) == -1) {
			e = errno;
			log_err("spool: fsync of the directory of %s: %s",
			    names[i], strerror(e));
			for (j = i; j < n; j++)
				if (dirfds[j] == d && st[j] == MSG_OK) {
					unlinkat(d, names[j], 0);
					st[j] = spool_errno_status(e);
				}
			continue;
		}
		if (nsynced < (int)(sizeof(synced) / sizeof(synced[0])))
			synced[nsynced++] = d;
	}
}

/* Whether an item of a commit is a new message to hold. */
static int
held(const struct spool *s, const struct spool_item *it)
{
	return s->hold != NULL && it->from == SPOOL__MAX &&
	    (it->dir == SPOOL_NEW || it->dir == SPOOL_DEFERRED);
}

/*
 * Whether a message written into dir has a final status there, so that
 * its client's list hears of it after the rename, not before (list.h).
 */
static int
final_state(enum spool_dir dir)
{
	return dir == SPOOL_SENT || dir == SPOOL_FAILED;
}

size_t
spool_commit(struct spool *s, struct spool_item *items, size_t n)
{
	const json_t	**docs;
	const char	**names;
	char		(*idnames)[SPOOL_NAME_MAX];
	enum msg_status	 *st, *pre;
	time_t		 *mtimes;
	int		 *dirfds;
	const char	 *id;
	size_t		  i, ok = 0;

	docs = calloc(n ? n : 1, sizeof(*docs));
	names = calloc(n ? n : 1, sizeof(*names));
	idnames = calloc(n ? n : 1, sizeof(*idnames));
	st = calloc(n ? n : 1, sizeof(*st));
	pre = calloc(n ? n : 1, sizeof(*pre));
	mtimes = calloc(n ? n : 1, sizeof(*mtimes));
	dirfds = calloc(n ? n : 1, sizeof(*dirfds));
	if (docs == NULL || names == NULL || idnames == NULL || st == NULL ||
	    pre == NULL || mtimes == NULL || dirfds == NULL) {
		for (i = 0; i < n; i++)
			items[i].status = MSG_TEMPFAIL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		docs[i] = items[i].doc;
		if (items[i].name != NULL)
			names[i] = items[i].name;
		else {
			id = json_string_value(json_object_get(items[i].doc,
			    "id"));
			snprintf(idnames[i], sizeof(idnames[i]), "%s.json",
			    id ? id : "");
			names[i] = idnames[i];
		}
		if (strchr(names[i], '/') != NULL || names[i][0] == '.' ||
		    !ulid_prefix(names[i]) || items[i].dir >= SPOOL__MAX) {
			dirfds[i] = -1;
			continue;
		}
		dirfds[i] = spool_statefd(s, items[i].dir);
		mtimes[i] = items[i].dir == SPOOL_DEFERRED ?
		    msgdoc_due(items[i].doc) : 0;
		/* Held: written as tmp/NAME.held, published later. */
		if (held(s, &items[i])) {
			if (names[i] != idnames[i])
				snprintf(idnames[i], sizeof(idnames[i]), "%s",
				    names[i]);
			snprintf(idnames[i] + strlen(idnames[i]),
			    sizeof(idnames[i]) - strlen(idnames[i]), "%s",
			    SPOOL_HELD_SUFFIX);
			names[i] = idnames[i];
			dirfds[i] = spool_statefd(s, SPOOL_TMP);
		}
	}
	/*
	 * Each message's line in its client's list before it is renamed in
	 * (list.h): an accepted message is never missing from it.  One
	 * that cannot be noted is not written (pre[i] says why).
	 */
	for (i = 0; i < n; i++)
		items[i].status = dirfds[i] == -1 ||
		    final_state(items[i].dir) ? MSG_PERMFAIL : MSG_OK;
	list_note_items(s, items, n);
	for (i = 0; i < n; i++)
		if ((pre[i] = items[i].status) != MSG_OK && dirfds[i] != -1 &&
		    !final_state(items[i].dir))
			dirfds[i] = -1;
	spool_commit_files(s, docs, dirfds, names, mtimes, st, n);
	for (i = 0; i < n; i++) {
		items[i].status = dirfds[i] == -1 ? pre[i] : st[i];
		if (items[i].status != MSG_OK)
			continue;
		/* A final status: noted once it is true. */
		if (final_state(items[i].dir) && list_note(s, items[i].doc,
		    items[i].dir) == -1)
			log_warn("spool: %s: the list of its client: %s",
			    names[i], strerror(errno));
		if (held(s, &items[i])) {
			idnames[i][strlen(idnames[i]) -
			    strlen(SPOOL_HELD_SUFFIX)] = '\0';
			if (spool_hold_add(s->hold, items[i].dir,
			    idnames[i]) == -1) {
				strcat(idnames[i], SPOOL_HELD_SUFFIX);
				unlinkat(dirfds[i], idnames[i], 0);
				items[i].status = MSG_TEMPFAIL;
				continue;
			}
		}
		ok++;
		if (items[i].from != SPOOL__MAX &&
		    items[i].from != items[i].dir) {
			FAULT("commit: recorded, the old not yet removed");
			unlinkat(spool_statefd(s, items[i].from), names[i], 0);
		}
	}
out:
	free(docs);
	free(names);
	free(idnames);
	free(st);
	free(pre);
	free(mtimes);
	free(dirfds);
	return ok;
}

enum msg_status
spool_enqueue(struct spool *s, const json_t *doc, enum spool_dir dest)
{
	struct spool_item	it = { doc, dest, NULL, SPOOL__MAX, MSG_OK };
	const char		*id;

	id = json_string_value(json_object_get(doc, "id"));
	if (id == NULL || !ulid_valid(id) ||
	    (dest != SPOOL_NEW && dest != SPOOL_DEFERRED))
		return MSG_PERMFAIL;
	spool_commit(s, &it, 1);
	return it.status;
}

enum msg_status
spool_store(struct spool *s, enum spool_dir dir, const char *name,
    const json_t *doc, enum spool_dir from)
{
	struct spool_item	it = { doc, dir, name, from, MSG_OK };

	spool_commit(s, &it, 1);
	return it.status;
}

ssize_t
spool_batch_add(struct spool_batch *b, json_t *doc, enum spool_dir dest)
{
	struct spool_item	*v;
	size_t			 cap;

	if (doc == NULL)
		return -1;
	if (b->n == b->cap) {
		cap = b->cap ? b->cap * 2 : 16;
		if ((v = reallocarray(b->items, cap, sizeof(*v))) == NULL) {
			json_decref(doc);
			return -1;
		}
		b->items = v;
		b->cap = cap;
	}
	b->items[b->n].doc = doc;
	b->items[b->n].dir = dest;
	b->items[b->n].name = NULL;
	b->items[b->n].from = SPOOL__MAX;
	b->items[b->n].status = MSG_TEMPFAIL;
	return (ssize_t)b->n++;
}

size_t
spool_batch_commit(struct spool *s, struct spool_batch *b)
{
	return b->n ? spool_commit(s, b->items, b->n) : 0;
}

enum msg_status
spool_batch_status(const struct spool_batch *b, size_t i)
{
	return i < b->n ? b->items[i].status : MSG_PERMFAIL;
}

void
spool_batch_free(struct spool_batch *b)
{
	size_t	i;

	for (i = 0; i < b->n; i++)
		json_decref((json_t *)b->items[i].doc);
	free(b->items);
	b->items = NULL;
	b->n = b->cap = 0;
}
