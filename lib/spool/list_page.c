/*
 * list_page.c: a page of a client's list, newest first, by filters and
 * cursor (GET /messages; list.h): the segments read from the newest, and
 * the lines that may be behind their files checked against them.
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
#include "spool/cancel.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/list_impl.h"

/* ---- reading a page ---- */

struct page {
	struct spool		*s;
	const char		*client;
	const struct list_filter *f;
	time_t			 now;
	long			 retention;
	struct buf		*out;
	size_t			 n;
	char			 last[SPOOL_ID_LEN + 1];
	int			 more;		/* one past the page found */
	int			 inboxfd;	/* inbox/, opened when first needed */
};

/*
 * The current object of outbound message l from its file, when the line
 * may be behind it: a new JSON text (malloc'd) and its status; NULL when
 * there is no such message of this client (*gone set) or on error.
 */
static char *
from_file(struct page *pg, const struct line *l, int *st, int *gone)
{
	enum spool_dir	 dir;
	json_t		*doc = NULL, *obj;
	char		 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char		 err[256], *text = NULL;
	const char	*status;

	*gone = 0;
	memcpy(id, l->id, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	/* Not there, or another client's: gone from this one's list. */
	if ((doc = spool_lookup(pg->s, id, pg->client, &dir, name, err,
	    sizeof(err))) == NULL) {
		if (errno != ENOENT)
			log_warn("lists: %s", err);
		*gone = 1;
		return NULL;
	}
	status = msgdoc_status(doc, spool_dirname(dir));
	*st = list_status_parse(status, strlen(status));
	if ((obj = msgdoc_status_object(doc, spool_dirname(dir), 0)) != NULL) {
		text = buf_json_text(obj, JSON_COMPACT, NULL);
		json_decref(obj);
	}
	json_decref(doc);
	return text;
}

/* The inbound object of client's inbound message id from its file, a
 * new JSON text; NULL when there is none of this client's. */
static char *
inbound_from_file(struct page *pg, const char *id)
{
	json_t	*doc, *obj;
	char	 err[256], *text = NULL;

	if ((doc = inbox_load(pg->s, id, err, sizeof(err))) == NULL)
		return NULL;
	if (inbox_client(doc) != NULL && strcmp(inbox_client(doc),
	    pg->client) == 0 && (obj = inbox_object(doc)) != NULL) {
		text = buf_json_text(obj, JSON_COMPACT, NULL);
		json_decref(obj);
	}
	json_decref(doc);
	return text;
}

/* Whether state dir agrees with a line's status st (not final). */
static int
dir_agrees(enum spool_dir dir, int st)
{
	switch (st) {
	case LIST_QUEUED:
		return dir == SPOOL_NEW;
	case LIST_SCHEDULED:
	case LIST_RETRYING:
		return dir == SPOOL_DEFERRED;
	default:
		return 0;
	}
}

/*
 * Consider line l (a message's current line) for the page: append its
 * object when it passes the filter.  1 when the page is full and one
 * more matched (stop), 0 to go on, -1 on error.
 */
static int
consider(struct page *pg, const struct line *l)
{
	const struct list_filter *f = pg->f;
	enum spool_dir	 dir;
	char		 name[SPOOL_NAME_MAX], id[SPOOL_ID_LEN + 1];
	char		*text = NULL;
	const char	*json = l->json;
	size_t		 json_len = l->json_len;
	int		 st, gone, inbound;

	if (l->gone)
		return 0;
	if (f->after != NULL && memcmp(l->id, f->after, SPOOL_ID_LEN) >= 0)
		return 0;
	inbound = list_field_is(l->dir, l->dir_len, "inbound");
	if (f->direction != -1 && inbound != (f->direction == LIST_INBOUND))
		return 0;
	if (f->channel != -1 && !list_field_is(l->channel, l->channel_len,
	    channel_info((enum channel)f->channel)->name))
		return 0;
	if (f->address != NULL && !list_field_is(l->addr, l->addr_len, f->address))
		return 0;
	if (f->reference != NULL && !list_field_is(l->ref, l->ref_len,
	    f->reference))
		return 0;
	if (f->since != -1 && l->created < (long long)f->since)
		return 0;
	if (f->until != -1 && l->created >= (long long)f->until)
		return 0;
	memcpy(id, l->id, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	if (inbound) {
		if (f->statuses != 0)
			return 0;
		/* Its line comes before its file: the file decides (and
		 * it goes with inbox/'s pruning). */
		if (pg->inboxfd == -1 && (pg->inboxfd = spool_area(pg->s,
		    INBOX_AREA, 0)) == -1)
			return 0;
		if (!list_exists(pg->s, pg->inboxfd, l->id))
			return 0;
	} else {
		st = list_status_parse(l->status, l->status_len);
		if (st == -1)
			return 0;
		if (!list_status_final(st)) {
			/*
			 * Its file decides: it may have moved on.  Looked
			 * for first where its status says, where most are
			 * (spool_find looks in sent/ first).
			 */
			dir = st == LIST_QUEUED ? SPOOL_NEW : SPOOL_DEFERRED;
			if ((!dir_agrees(dir, st) || !list_exists(pg->s,
			    spool_statefd(pg->s, dir), l->id)) &&
			    spool_find(pg->s, id, &dir, name) == -1)
				return 0;
			if (!dir_agrees(dir, st)) {
				if ((text = from_file(pg, l, &st, &gone)) ==
				    NULL)
					return gone ? 0 : -1;
				json = text;
				json_len = strlen(text);
			}
		} else if (st <= LIST_UNDELIVERED && pg->retention > 0 &&
		    l->at < (long long)(pg->now - pg->retention +
		    PRUNE_SLACK) && !list_exists(pg->s,
		    spool_statefd(pg->s, SPOOL_SENT), l->id))
			return 0;
		if (st == -1 || (f->statuses != 0 &&
		    !(f->statuses & (1u << st)))) {
			free(text);
			return 0;
		}
	}
	/* A line damaged since it was written: its file tells instead. */
	if (text == NULL && !list_line_intact(l)) {
		if (inbound)
			text = inbound_from_file(pg, id);
		else if ((text = from_file(pg, l, &st, &gone)) != NULL &&
		    (st == -1 || (f->statuses != 0 &&
		    !(f->statuses & (1u << st))))) {
			free(text);
			return 0;
		}
		if (text == NULL)
			return 0;
		json = text;
		json_len = strlen(text);
	}
	if (pg->n == f->limit) {
		free(text);
		pg->more = 1;
		return 1;
	}
	if (pg->n > 0)
		buf_putc(pg->out, ',');
	buf_add(pg->out, json, json_len);
	free(text);
	memcpy(pg->last, id, SPOOL_ID_LEN + 1);
	pg->n++;
	return pg->out->failed ? -1 : 0;
}

/*
 * The lines of text, folded, offered to the page in order.  1 when the
 * page is done, 0 to go on, -1 on error.
 */
static int
offer(struct page *pg, const char *text, size_t len)
{
	struct line	*v;
	ssize_t		 n, i;
	int		 rc = 0;

	if ((n = list_fold(text, len, &v)) == -1)
		return -1;
	for (i = 0; i < n && rc == 0; i++)
		rc = consider(pg, &v[i]);
	free(v);
	return rc;
}

static int
page_from_index(struct page *pg, int cfd, int *restart)
{
	const struct list_filter *f = pg->f;
	struct head	 h;
	char		*text, seg[SPOOL_ID_LEN + 1], prev[SPOOL_ID_LEN + 1];
	size_t		 len;
	int		 hfd, rc = 0;
	long long	 stop_ms;

	*restart = 0;
	if ((hfd = openat(cfd, HEAD_NAME, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	rc = list_head_read(hfd, &h);
	close(hfd);
	if (rc == -1) {
		*restart = 1;
		return 0;
	}
	if (h.seg[0] == '\0')
		return 0;
	memcpy(seg, h.seg, SPOOL_ID_LEN + 1);
	/* A cursor: the segments from the one that holds it, not newer. */
	if (f->after != NULL && strcmp(f->after, h.seg) <= 0 &&
	    list_seg_find(cfd, h.gen, f->after, seg) == -1)
		return errno == ENOENT ? 0 : -1;
	stop_ms = f->since != -1 ? ((long long)f->since - CREATED_SLACK) *
	    1000 : -1;
	for (;;) {
		if (list_seg_read(cfd, h.gen, seg, &text, &len) == -1) {
			if (errno == ENOENT) {
				*restart = 1;
				return 0;
			}
			return -1;
		}
		list_seg_prev(text, len, h.gen, prev);
		rc = offer(pg, text, len);
		free(text);
		if (rc != 0)
			return rc == 1 ? 0 : -1;
		/* Everything before this segment is older than since. */
		if (prev[0] == '\0' || (stop_ms != -1 && ulid_time(seg) <
		    stop_ms))
			return 0;
		memcpy(seg, prev, SPOOL_ID_LEN + 1);
	}
}

int
list_page(struct spool *s, const char *client, const struct list_filter *f,
    time_t now, long retention, struct buf *out, size_t *n, char *next)
{
	struct list_filter fc = *f;
	struct page	 pg;
	struct buf	 b = { 0 };
	char		 after[SPOOL_ID_LEN + 1];
	struct stat	 st;
	size_t		 mark = out->len;
	int		 afd, cfd, tries, restart, e, rc = -1;

	/* The cursor may be where the next one goes. */
	if (f->after != NULL) {
		snprintf(after, sizeof(after), "%s", f->after);
		fc.after = after;
	}
	memset(&pg, 0, sizeof(pg));
	pg.s = s;
	pg.client = client;
	pg.f = &fc;
	pg.now = now;
	pg.retention = retention;
	pg.out = out;
	pg.inboxfd = -1;
	next[0] = '\0';
	*n = 0;
	/* lists/ opened once: whether it was built, then the client's. */
	afd = spool_area(s, LIST_AREA, 0);
	if (afd == -1 || fstatat(afd, BUILT_NAME, &st,
	    AT_SYMLINK_NOFOLLOW) == -1) {
		if (afd != -1)
			close(afd);
		/* Never built: every file is read, nothing left out. */
		if (list_scan_client(s, client, &b) == 0)
			rc = offer(&pg, b.p ? b.p : "", b.len) == -1 ? -1 : 0;
		buf_free(&b);
		goto done;
	}
	if (!valid_client_id(client)) {
		close(afd);
		errno = EINVAL;
		goto done;
	}
	cfd = spool_subdir(afd, client, 0);
	e = errno;
	close(afd);
	if (cfd == -1) {
		rc = e == ENOENT ? 0 : -1;
		errno = e;
		goto done;
	}
	for (tries = 0; tries < PAGE_TRIES; tries++) {
		out->len = mark;
		if (out->p != NULL)
			out->p[mark] = '\0';
		pg.n = 0;
		pg.more = 0;
		if ((rc = page_from_index(&pg, cfd, &restart)) == -1 ||
		    !restart)
			break;
	}
	close(cfd);
done:
	if (pg.inboxfd != -1)
		close(pg.inboxfd);
	if (rc == 0) {
		*n = pg.n;
		if (pg.more)
			memcpy(next, pg.last, SPOOL_ID_LEN + 1);
	}
	return rc;
}
