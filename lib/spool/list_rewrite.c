/*
 * list_rewrite.c: the segments rewritten under their client's lock:
 * compacted hourly by msgspoold, erased from by msgspool erase, and the
 * segments left empty removed (msgspool-spool(5), Lists).
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/log.h"
#include "base/netfs.h"
#include "base/util.h"
#include "base/valid.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/list_impl.h"

static int	 relink(int, const struct head *);

/* ---- rewriting segments ---- */

/*
 * Take the rewriters' lock of lists/ (afd): one rewriter at a time, so
 * that a reindex's count of what was appended meanwhile stays true.
 */
int
list_rewrite_lock(int afd)
{
	int	fd, e;

	if ((fd = openat(afd, REWRITE_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE | 0020)) == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1)
		if (errno != EINTR) {
			e = errno;
			close(fd);
			errno = e;
			return -1;
		}
	return fd;
}

/*
 * What a rewrite does with a message's last line: keep it, or drop the
 * message (every line of it).
 */
typedef int	 keep_fn(void *arg, const char *text, size_t len,
		    const struct line *last);

/*
 * Rewrite each segment of the client whose directory is cfd (its head
 * locked by the caller), keeping the messages keep says to keep: each
 * folded to its last line when fold_kept is set, else every line of it
 * as it was.  Returns how many messages were dropped, or -1.
 */
static ssize_t
rewrite_client(int cfd, const struct head *h, keep_fn *keep, void *arg,
    int fold_kept)
{
	struct buf	 b = { 0 };
	struct line	*v, pl;
	char		**segs, *text, prev[SPOOL_ID_LEN + 1];
	const char	*p, *end, *nl;
	ssize_t		 nseg, k, nv, i, dropped = 0;
	size_t		 len, nlines;
	int		 changed;

	if ((nseg = list_seg_list(cfd, h->gen, &segs)) == -1)
		return -1;
	for (k = 0; k < nseg; k++) {
		if (list_seg_read(cfd, h->gen, segs[k], &text, &len) == -1) {
			if (errno == ENOENT)
				continue;
			dropped = -1;
			break;
		}
		if ((nv = list_fold(text, len, &v)) == -1) {
			free(text);
			dropped = -1;
			break;
		}
		changed = 0;
		/* Mark the dropped: their id's first byte zeroed in v. */
		for (i = 0; i < nv; i++)
			if (!keep(arg, text, len, &v[i])) {
				v[i].len = 0;
				changed = 1;
				dropped++;
			}
		nlines = 0;
		for (p = text, end = text + len; p < end && (nl = memchr(p,
		    '\n', (size_t)(end - p))) != NULL; p = nl + 1)
			if (list_line_parse(p, (size_t)(nl - p), &pl) == 0)
				nlines++;
		if (fold_kept && (size_t)nv < nlines)
			changed = 1;
		if (changed) {
			b.len = 0;
			b.failed = 0;
			list_seg_prev(text, len, h->gen, prev);
			list_put_prev(&b, h->gen, prev);
			if (fold_kept) {
				/* Oldest first, as appended. */
				for (i = nv; i-- > 0;)
					if (v[i].len > 0) {
						buf_add(&b, v[i].start,
						    v[i].len);
						buf_putc(&b, '\n');
					}
			} else
				for (p = text; p < end && (nl = memchr(p,
				    '\n', (size_t)(end - p))) != NULL;
				    p = nl + 1) {
					if (list_line_parse(p, (size_t)(nl - p),
					    &pl) == 0) {
						/* Dropped: its last line
						 * has len 0. */
						for (i = 0; i < nv; i++)
							if (memcmp(v[i].id,
							    pl.id,
							    SPOOL_ID_LEN) == 0)
								break;
						if (i < nv && v[i].len == 0)
							continue;
					}
					if (p == text && memcmp(p, PREV_TAG,
					    sizeof(PREV_TAG) - 1) == 0)
						continue;
					buf_add(&b, p, (size_t)(nl - p) + 1);
				}
			if (b.failed || list_seg_replace(cfd, h->gen, segs[k],
			    b.p ? b.p : "", b.len) == -1) {
				free(v);
				free(text);
				dropped = -1;
				break;
			}
		}
		free(v);
		free(text);
	}
	buf_free(&b);
	spool_names_free(segs, (size_t)nseg);
	if (dropped > 0 && relink(cfd, h) == -1)
		log_warn("lists: the segments left empty stay: %s",
		    strerror(errno));
	return dropped;
}

/* Whether a segment's text holds a line of a message. */
static int
seg_has_lines(const char *text, size_t len)
{
	const char	*p, *end = text + len, *nl;
	struct line	 l;

	for (p = text; p < end && (nl = memchr(p, '\n', (size_t)(end - p))) !=
	    NULL; p = nl + 1)
		if (list_line_parse(p, (size_t)(nl - p), &l) == 0)
			return 1;
	return 0;
}

/*
 * Remove the segments a rewrite left empty (but the newest, where the
 * next message goes): each one's successor names the segment before it
 * first, then it goes; a reader on the old chain finds it gone and
 * starts again.  Its ids belong to the segment before it from then on.
 */
static int
relink(int cfd, const struct head *h)
{
	struct buf	 b = { 0 };
	char		**segs, *text, prev[SPOOL_ID_LEN + 1];
	char		 name[32 + SPOOL_ID_LEN];
	const char	*nl;
	size_t		 len;
	ssize_t		 n, i, k;
	int		*keep, rc = 0;

	if ((n = list_seg_list(cfd, h->gen, &segs)) <= 0)
		return n == -1 ? -1 : 0;
	if ((keep = calloc((size_t)n, sizeof(*keep))) == NULL) {
		spool_names_free(segs, (size_t)n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		keep[i] = 1;
		if (strcmp(segs[i], h->seg) == 0)
			continue;
		if (list_seg_read(cfd, h->gen, segs[i], &text, &len) == 0) {
			keep[i] = seg_has_lines(text, len);
			free(text);
		}
	}
	/* Newest first: each kept one names the next kept one down. */
	for (i = 0; i < n && rc == 0; i++) {
		if (!keep[i])
			continue;
		for (k = i + 1; k < n && !keep[k]; k++)
			;
		if (k == i + 1)
			continue;	/* its #prev stands */
		if (list_seg_read(cfd, h->gen, segs[i], &text, &len) == -1) {
			rc = -1;
			break;
		}
		list_seg_prev(text, len, h->gen, prev);
		b.len = 0;
		b.failed = 0;
		list_put_prev(&b, h->gen, k < n ? segs[k] : "");
		if (prev[0] != '\0' && (nl = memchr(text, '\n', len)) != NULL)
			buf_add(&b, nl + 1, len - (size_t)(nl + 1 - text));
		else
			buf_add(&b, text, len);
		free(text);
		if (b.failed || list_seg_replace(cfd, h->gen, segs[i], b.p ? b.p :
		    "", b.len) == -1)
			rc = -1;
	}
	for (i = 0; i < n && rc == 0; i++)
		if (!keep[i]) {
			list_seg_name(name, sizeof(name), h->gen, segs[i]);
			unlinkat(cfd, name, 0);
		}
	buf_free(&b);
	free(keep);
	spool_names_free(segs, (size_t)n);
	return rc;
}

/*
 * Run fn on each client of lists/ under its head's lock, with the
 * rewriters' lock held; only client's when it is not NULL.
 */
static ssize_t
each_client(struct spool *s, const char *client,
    ssize_t (*fn)(void *, const char *, int, struct head *), void *arg)
{
	DIR		*dir;
	struct dirent	*de;
	struct head	 h;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0, i;
	ssize_t		 total = 0, r;
	int		 afd, lfd, cfd, hfd, fd;

	if ((afd = spool_area(s, LIST_AREA, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((lfd = list_rewrite_lock(afd)) == -1) {
		close(afd);
		return -1;
	}
	if ((fd = dup(afd)) != -1 && (dir = fdopendir(fd)) != NULL) {
		while ((de = readdir(dir)) != NULL) {
			if (!valid_client_id(de->d_name) || (client != NULL &&
			    strcmp(client, de->d_name) != 0))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				if ((nv = reallocarray(v, cap,
				    sizeof(*v))) == NULL)
					break;
				v = nv;
			}
			if ((v[n] = strdup(de->d_name)) == NULL)
				break;
			n++;
		}
		closedir(dir);
	} else if (fd != -1)
		close(fd);
	for (i = 0; i < n; i++) {
		if ((cfd = spool_subdir(afd, v[i], 0)) == -1)
			continue;
		if ((hfd = list_head_lock(cfd, 0)) != -1) {
			if (list_head_read(hfd, &h) == 0 && h.seg[0] != '\0' &&
			    (r = fn(arg, v[i], cfd, &h)) > 0)
				total += r;
			close(hfd);
		}
		close(cfd);
	}
	spool_names_free(v, n);
	close(lfd);
	close(afd);
	return total;
}

/* ---- compacting ---- */

struct compact {
	struct spool	*s;
	time_t		 now;
	long		 retention;
	int		 inboxfd;
};

static int
compact_keep(void *arg, const char *text, size_t len, const struct line *l)
{
	struct compact	*c = arg;
	enum spool_dir	 dir;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	int		 st;

	(void)text;
	(void)len;
	if (l->gone)
		return 0;
	memcpy(id, l->id, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	if (list_field_is(l->dir, l->dir_len, "inbound"))
		return c->retention <= 0 || l->at >= (long long)(c->now -
		    c->retention) || c->inboxfd == -1 ||
		    list_exists(c->s, c->inboxfd, id);
	st = list_status_parse(l->status, l->status_len);
	if (st >= LIST_SENT && st <= LIST_UNDELIVERED)
		return c->retention <= 0 || l->at >= (long long)(c->now -
		    c->retention) || list_exists(c->s, spool_statefd(c->s,
		    SPOOL_SENT), id);
	if (list_status_final(st))
		return 1;
	/* Not final: never accepted (a writer killed), or moved on. */
	return l->at >= (long long)(c->now - STALE_AGE) ||
	    spool_find(c->s, id, &dir, name) == 0;
}

static ssize_t
compact_client(void *arg, const char *client, int cfd, struct head *h)
{
	(void)client;
	return rewrite_client(cfd, h, compact_keep, arg, 1);
}

size_t
list_compact(struct spool *s, time_t now, long retention)
{
	struct compact	c = { s, now, retention, -1 };
	ssize_t		n;

	c.inboxfd = spool_area(s, INBOX_AREA, 0);
	n = each_client(s, NULL, compact_client, &c);
	if (c.inboxfd != -1)
		close(c.inboxfd);
	return n > 0 ? (size_t)n : 0;
}

/* ---- erasing ---- */

struct erase {
	const char *const *needles;
	json_t		*ids;
};

static int
erase_keep(void *arg, const char *text, size_t len, const struct line *l)
{
	struct erase	*e = arg;
	const char	*p, *end = text + len, *nl;
	struct line	 pl;
	size_t		 k;
	char		 id[SPOOL_ID_LEN + 1];

	/* Any line of the message that names a needle. */
	for (p = text; p < end && (nl = memchr(p, '\n', (size_t)(end - p))) !=
	    NULL; p = nl + 1) {
		if (list_line_parse(p, (size_t)(nl - p), &pl) == -1 ||
		    memcmp(pl.id, l->id, SPOOL_ID_LEN) != 0)
			continue;
		for (k = 0; e->needles[k] != NULL; k++)
			if (*e->needles[k] != '\0' && memmem(p,
			    (size_t)(nl - p), e->needles[k],
			    strlen(e->needles[k])) != NULL) {
				if (e->ids != NULL) {
					memcpy(id, l->id, SPOOL_ID_LEN);
					id[SPOOL_ID_LEN] = '\0';
					json_array_append_new(e->ids,
					    json_string(id));
				}
				return 0;
			}
	}
	return 1;
}

static ssize_t
erase_client(void *arg, const char *client, int cfd, struct head *h)
{
	(void)client;
	return rewrite_client(cfd, h, erase_keep, arg, 0);
}

ssize_t
list_erase(struct spool *s, const char *client, const char *const *needles,
    json_t *ids)
{
	struct erase	e = { needles, ids };

	return each_client(s, client, erase_client, &e);
}
