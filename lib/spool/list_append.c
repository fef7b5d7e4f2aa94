/*
 * list_append.c: lines appended to a client's list (list.h;
 * msgspool-spool(5), Lists): under one lock of its head, each line into
 * the segment that holds its id, the lines of one segment in one write,
 * so that a batch's messages cost one lock and a few writes, not a lock
 * and a dozen system calls each.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/util.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/list_impl.h"

/* The segment being appended to, and its lines not yet written. */
struct out {
	char		 seg[SPOOL_ID_LEN + 1];	/* "" when none is open */
	char		 next[SPOOL_ID_LEN + 1];	/* the one after it, or "" */
	int		 fd;
	off_t		 size;		/* its size with pend; -1 unknown */
	struct buf	 pend;
	size_t		 first;		/* the first line of pend (in order) */
	int		 lost;		/* pend's write failed: its errno */
};

static int
by_id(const void *a, const void *b)
{
	return strcmp((*(struct list_add *const *)a)->id,
	    (*(struct list_add *const *)b)->id);
}

/*
 * Write o's pending lines and close its segment.  The segment locked
 * too, while it is written: on NFS a lock the server gave away (a
 * partition longer than the lease) fails the write (EIO) rather than
 * letting it land, late, over the lines other hosts appended meanwhile
 * at the same offset.  On NFS the data reaches the server at the close,
 * before the head's lock goes.  0, or -1 with o->lost set.
 */
static int
flush(struct out *o)
{
	int	fd = o->fd, e = 0;

	o->fd = -1;
	o->seg[0] = o->next[0] = '\0';
	if (fd == -1)
		return 0;
	if (o->pend.len > 0 && (list_lock_fd(fd) == -1 ||
	    util_write_all(fd, o->pend.p, o->pend.len) == -1))
		e = errno;
	if (close(fd) == -1 && e == 0)
		e = errno;
	o->pend.len = 0;
	if (e != 0) {
		o->lost = e;
		return -1;
	}
	return 0;
}

/*
 * Make seg (made with its #prev line prev when new; fd when it is open
 * already, else -1) o's segment, for the lines from line i on, the lines
 * before written first (*done then the head they need, before).  0, or
 * -1 with errno (o->lost set when the lines before were lost).
 */
static int
move(struct out *o, int cfd, long long gen, const char *seg,
    const char *prev, int fd, size_t i, struct head *done,
    const struct head *before)
{
	if (strcmp(o->seg, seg) == 0) {
		if (fd != -1)
			close(fd);
		return 0;
	}
	if (flush(o) == -1) {
		if (fd != -1)
			close(fd);
		errno = o->lost;
		return -1;
	}
	*done = *before;
	if ((o->fd = fd != -1 ? fd : list_seg_open_append(cfd, gen, seg,
	    prev)) == -1)
		return -1;
	memcpy(o->seg, seg, SPOOL_ID_LEN + 1);
	o->size = -1;
	o->first = i;
	return 0;
}

/* Mark lines first to n of ord failed with e. */
static void
fail(struct list_add **ord, size_t first, size_t n, int e)
{
	for (; first < n; first++)
		ord[first]->err = e;
}

int
list_append_lines(struct spool *s, const char *client, struct list_add *v,
    size_t n)
{
	struct list_add	**ord;
	struct out	 o = { .fd = -1 };
	struct head	 h0, h, done, before;
	struct seg_walk	 walk = { .n = 0 };
	struct stat	 st;
	const char	*id;
	char		 seg[SPOOL_ID_LEN + 1], prev[SPOOL_ID_LEN + 1];
	char		 next[SPOOL_ID_LEN + 1];
	size_t		 i;
	int		 cfd, hfd, fd, e = 0;

	if (n == 0)
		return 0;
	if ((ord = calloc(n, sizeof(*ord))) == NULL) {
		for (i = 0; i < n; i++)
			v[i].err = ENOMEM;
		return errno = ENOMEM, -1;
	}
	for (i = 0; i < n; i++) {
		v[i].err = 0;
		ord[i] = &v[i];
	}
	/* In the order of their ids: one segment after the other. */
	qsort(ord, n, sizeof(*ord), by_id);
	if ((cfd = list_client_dir(s, client, 1)) == -1) {
		e = errno;
		fail(ord, 0, n, e);
		free(ord);
		return errno = e, -1;
	}
	if ((hfd = list_head_lock(cfd, 1)) == -1 ||
	    list_head_read(hfd, &h0) == -1) {
		e = errno;
		fail(ord, 0, n, e);
		goto out;
	}
	/* done: the head as the lines written so far need it. */
	h = done = before = h0;
	for (i = 0; i < n; i++) {
		id = ord[i]->id;
		before = h;
		prev[0] = next[0] = '\0';
		fd = -1;
		if (h.seg[0] == '\0') {
			/* The first: a segment from this id on. */
			memcpy(h.seg, id, SPOOL_ID_LEN + 1);
			memcpy(h.max, id, SPOOL_ID_LEN + 1);
			memcpy(seg, id, SPOOL_ID_LEN + 1);
		} else if (strcmp(id, h.seg) >= 0) {
			memcpy(seg, h.seg, SPOOL_ID_LEN + 1);
			if (strcmp(id, h.max) > 0) {
				/* Past every id so far: a new segment when
				 * the newest is full. */
				if (move(&o, cfd, h.gen, seg, NULL, -1, i, &done,
				    &before) == -1)
					break;
				if (o.size == -1) {
					if (fstat(o.fd, &st) == -1)
						break;
					o.size = st.st_size + (off_t)o.pend.len;
				}
				if (o.size >= SEG_BYTES) {
					memcpy(prev, h.seg, SPOOL_ID_LEN + 1);
					memcpy(h.seg, id, SPOOL_ID_LEN + 1);
					memcpy(seg, id, SPOOL_ID_LEN + 1);
				}
				memcpy(h.max, id, SPOOL_ID_LEN + 1);
			}
		} else if (o.next[0] != '\0' && strcmp(id, o.seg) >= 0 &&
		    strcmp(id, o.next) < 0) {
			/* Late too, and in the segment open already. */
			memcpy(seg, o.seg, SPOOL_ID_LEN + 1);
			memcpy(next, o.next, SPOOL_ID_LEN + 1);
		} else if ((fd = list_seg_open_old(s, client, cfd, &h, id,
		    seg, next, &walk)) == -1)
			break;
		if (move(&o, cfd, h.gen, seg, prev, fd, i, &done, &before) ==
		    -1)
			break;
		memcpy(o.next, next, SPOOL_ID_LEN + 1);
		if (buf_add(&o.pend, ord[i]->text, ord[i]->len) == -1) {
			errno = ENOMEM;
			break;
		}
		if (o.size != -1)
			o.size += (off_t)ord[i]->len;
	}
	if (i < n) {
		/* Line i failed: it and the rest are not noted. */
		e = errno;
		fail(ord, i, n, e);
		n = i;
		h = before;
	}
	if (o.lost == 0)
		flush(&o);
	if (o.lost != 0) {
		/* The lines pending are lost; the head as written before. */
		e = o.lost;
		fail(ord, o.first, n, e);
		h = done;
	}
	/* The head names what was written, when that moved it. */
	if (memcmp(&h, &h0, sizeof(h)) != 0 && list_head_write(hfd, &h) ==
	    -1) {
		e = errno;
		fail(ord, 0, n, e);
	}
out:
	buf_free(&o.pend);
	if (hfd != -1)
		close(hfd);
	close(cfd);
	free(ord);
	if (e != 0)
		return errno = e, -1;
	return 0;
}

int
list_append(struct spool *s, const char *client, const char *id,
    const char *text, size_t len)
{
	struct list_add	v = { .id = id, .text = text, .len = len };

	return list_append_lines(s, client, &v, 1);
}
