/*
 * list_build.c: every client's list built again from the spool's files
 * (msgspool reindex; msgspoold when lists/ was never built), a new
 * generation swapped in under each client's lock.
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

/* ---- rebuilding ---- */

/* A client's lines gathered by a reindex. */
struct gathered {
	char		 client[256];
	struct buf	 b;
	/* The segments of its current generation and their sizes when the
	 * reading began: what lies past them was appended since. */
	char		**segs;
	off_t		*sizes;
	size_t		 nsegs;
	long long	 gen;
	int		 had_head;
};

struct reindex {
	struct gathered	*v;
	size_t		 n, cap;
	size_t		 listed;
};

static struct gathered *
gathered_of(struct reindex *r, const char *client)
{
	struct gathered	*nv;
	size_t		 i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->v[i].client, client) == 0)
			return &r->v[i];
	if (strlen(client) >= sizeof(r->v[0].client))
		return NULL;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		if ((nv = reallocarray(r->v, r->cap, sizeof(*nv))) == NULL)
			return NULL;
		r->v = nv;
	}
	memset(&r->v[r->n], 0, sizeof(r->v[r->n]));
	snprintf(r->v[r->n].client, sizeof(r->v[r->n].client), "%s", client);
	return &r->v[r->n++];
}

static int
to_gathered(struct scan *sc, const char *client, const char *id,
    const char *line, size_t len)
{
	struct reindex	*r = sc->arg;
	struct gathered	*g;

	(void)id;
	if ((g = gathered_of(r, client)) == NULL)
		return -1;
	r->listed++;
	return buf_add(&g->b, line, len);
}

/* Note the sizes of client's segments now (head locked meanwhile). */
static int
note_sizes(struct spool *s, struct gathered *g)
{
	struct head	 h;
	struct stat	 st;
	char		 name[32 + SPOOL_ID_LEN];
	ssize_t		 n, i;
	int		 cfd, hfd;

	if ((cfd = list_client_dir(s, g->client, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((hfd = list_head_lock(cfd, 0)) == -1) {
		close(cfd);
		return errno == ENOENT ? 0 : -1;
	}
	if (list_head_read(hfd, &h) == 0) {
		g->had_head = 1;
		g->gen = h.gen;
		if ((n = list_seg_list(cfd, h.gen, &g->segs)) > 0) {
			g->nsegs = (size_t)n;
			g->sizes = calloc((size_t)n, sizeof(*g->sizes));
			for (i = 0; i < n && g->sizes != NULL; i++) {
				list_seg_name(name, sizeof(name), h.gen,
				    g->segs[i]);
				if (fstatat(cfd, name, &st,
				    AT_SYMLINK_NOFOLLOW) == 0)
					g->sizes[i] = st.st_size;
			}
		}
	}
	close(hfd);
	close(cfd);
	return 0;
}

/* Which recorded size a segment of the old generation had; 0: none. */
static off_t
size_then(const struct gathered *g, const char *seg)
{
	size_t	i;

	for (i = 0; i < g->nsegs; i++)
		if (strcmp(g->segs[i], seg) == 0)
			return g->sizes ? g->sizes[i] : 0;
	return 0;
}

/*
 * Swap in client g's new generation: what was read, then what was
 * appended to the old one since; under its head's lock.
 */
static int
swap_in(struct spool *s, struct gathered *g, list_progress_fn *progress,
    void *parg, size_t *written, size_t total)
{
	struct head	 h, nh;
	struct line	*v = NULL;
	struct buf	 tail = { 0 }, seg = { 0 };
	char		**old = NULL, *text, name[32 + SPOOL_ID_LEN];
	char		 first[SPOOL_ID_LEN + 1], prev[SPOOL_ID_LEN + 1];
	const char	*p, *end, *nl;
	struct line	 pl;
	ssize_t		 nv = 0, nold = 0, i, k;
	size_t		 len;
	off_t		 from;
	int		 cfd, hfd = -1, rc = -1;

	if ((cfd = list_client_dir(s, g->client, 1)) == -1)
		return -1;
	if ((hfd = list_head_lock(cfd, 1)) == -1 || list_head_read(hfd, &h) == -1)
		goto out;
	/* What the old generation got since the reading began. */
	if (h.seg[0] != '\0' && (nold = list_seg_list(cfd, h.gen, &old)) == -1)
		goto out;
	for (k = nold; k-- > 0;) {
		if (list_seg_read(cfd, h.gen, old[k], &text, &len) == -1)
			continue;
		from = g->had_head && g->gen == h.gen ? size_then(g, old[k]) :
		    0;
		for (p = text + (from < (off_t)len ? from : (off_t)len),
		    end = text + len; p < end && (nl = memchr(p, '\n',
		    (size_t)(end - p))) != NULL; p = nl + 1)
			if (list_line_parse(p, (size_t)(nl - p), &pl) == 0)
				buf_add(&tail, p, (size_t)(nl - p) + 1);
		free(text);
	}
	/* What was read, newest first: one line a message. */
	if (g->b.len > 0 && (nv = list_fold(g->b.p, g->b.len, &v)) == -1)
		goto out;
	memset(&nh, 0, sizeof(nh));
	nh.gen = h.gen + 1;
	prev[0] = '\0';
	/* Segments from the oldest: each up to SEG_BYTES. */
	for (i = nv; i-- > 0;) {
		if (seg.len == 0) {
			memcpy(first, v[i].id, SPOOL_ID_LEN);
			first[SPOOL_ID_LEN] = '\0';
			list_put_prev(&seg, nh.gen, prev);
		}
		buf_add(&seg, v[i].start, v[i].len);
		buf_putc(&seg, '\n');
		if (seg.len >= SEG_BYTES || i == 0) {
			if (seg.failed || list_seg_replace(cfd, nh.gen, first,
			    seg.p, seg.len) == -1)
				goto out;
			memcpy(prev, first, SPOOL_ID_LEN + 1);
			memcpy(nh.seg, first, SPOOL_ID_LEN + 1);
			memcpy(nh.max, v[0].id, SPOOL_ID_LEN);
			nh.max[SPOOL_ID_LEN] = '\0';
			seg.len = 0;
			(*written)++;
			if (progress != NULL)
				progress(parg, "writing", *written, total);
		}
	}
	if (nh.seg[0] == '\0' && tail.len > 0) {
		/* Nothing read, only appended: from the tail's least id. */
		if ((nv = list_fold(tail.p, tail.len, &v)) <= 0)
			goto out;
		memcpy(nh.seg, v[nv - 1].id, SPOOL_ID_LEN);
		memcpy(nh.max, v[0].id, SPOOL_ID_LEN);
		free(v);
		v = NULL;
		if (list_seg_replace(cfd, nh.gen, nh.seg, "", 0) == -1)
			goto out;
	}
	if (nh.seg[0] != '\0') {
		/* The lines appended meanwhile, after, in their order. */
		for (p = tail.p, end = tail.p + tail.len; p != NULL && p < end &&
		    (nl = memchr(p, '\n', (size_t)(end - p))) != NULL;
		    p = nl + 1) {
			char	 at[SPOOL_ID_LEN + 1];
			int	 fd;

			memcpy(at, p, SPOOL_ID_LEN);
			at[SPOOL_ID_LEN] = '\0';
			if (strcmp(at, nh.max) > 0)
				memcpy(nh.max, at, SPOOL_ID_LEN + 1);
			if (strcmp(at, nh.seg) >= 0)
				memcpy(first, nh.seg, SPOOL_ID_LEN + 1);
			else if (list_seg_find(cfd, nh.gen, at, first) == -1)
				goto out;
			if ((fd = list_seg_open_append(cfd, nh.gen, first, NULL)) ==
			    -1)
				goto out;
			if (util_write_all(fd, p, (size_t)(nl - p) + 1) ==
			    -1) {
				close(fd);
				goto out;
			}
			close(fd);
		}
		if (list_head_write(hfd, &nh) == -1)
			goto out;
	} else if (h.seg[0] != '\0') {
		/* Nothing at all now: an empty list. */
		memset(&nh, 0, sizeof(nh));
		if (pwrite(hfd, "", 0, 0) == -1 || ftruncate(hfd, 0) == -1)
			goto out;
	}
	/* The old generation goes. */
	for (k = 0; k < nold; k++) {
		list_seg_name(name, sizeof(name), h.gen, old[k]);
		unlinkat(cfd, name, 0);
	}
	rc = 0;
out:
	free(v);
	buf_free(&tail);
	buf_free(&seg);
	spool_names_free(old, nold > 0 ? (size_t)nold : 0);
	if (hfd != -1)
		close(hfd);
	close(cfd);
	return rc;
}

ssize_t
list_reindex(struct spool *s, list_progress_fn *progress, void *parg,
    char *err, size_t errlen)
{
	struct reindex	 r;
	struct scan	 sc;
	struct gathered	*g;
	DIR		*dir;
	struct dirent	*de;
	size_t		 i, written = 0;
	ssize_t		 rc = -1;
	int		 afd, lfd = -1, fd;

	memset(&r, 0, sizeof(r));
	if ((afd = spool_area(s, LIST_AREA, 1)) == -1) {
		util_seterr(err, errlen, "%s/%s: %s", spool_root(s),
		    LIST_AREA, strerror(errno));
		return -1;
	}
	if ((lfd = list_rewrite_lock(afd)) == -1) {
		util_seterr(err, errlen, "%s/%s/%s: %s", spool_root(s),
		    LIST_AREA, REWRITE_LOCK, strerror(errno));
		goto out;
	}
	/* Every client listed now, and how far each segment went. */
	if ((fd = dup(afd)) != -1 && (dir = fdopendir(fd)) != NULL) {
		while ((de = readdir(dir)) != NULL)
			if (valid_client_id(de->d_name) &&
			    gathered_of(&r, de->d_name) == NULL)
				break;
		closedir(dir);
	} else if (fd != -1)
		close(fd);
	for (i = 0; i < r.n; i++)
		if (note_sizes(s, &r.v[i]) == -1) {
			util_seterr(err, errlen, "%s/%s/%s: %s",
			    spool_root(s), LIST_AREA, r.v[i].client,
			    strerror(errno));
			goto out;
		}
	memset(&sc, 0, sizeof(sc));
	sc.s = s;
	sc.fn = to_gathered;
	sc.arg = &r;
	sc.progress = progress;
	sc.parg = parg;
	if (list_scan_spool(&sc) == -1) {
		util_seterr(err, errlen, "reading the spool: %s",
		    strerror(errno ? errno : ENOMEM));
		goto out;
	}
	for (i = 0; i < r.n; i++) {
		g = &r.v[i];
		if (swap_in(s, g, progress, parg, &written,
		    r.listed / 64 + r.n) == -1) {
			util_seterr(err, errlen, "%s/%s/%s: %s",
			    spool_root(s), LIST_AREA, g->client,
			    strerror(errno));
			goto out;
		}
	}
	if ((fd = openat(afd, BUILT_NAME, O_WRONLY | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) == -1) {
		util_seterr(err, errlen, "%s/%s/%s: %s", spool_root(s),
		    LIST_AREA, BUILT_NAME, strerror(errno));
		goto out;
	}
	close(fd);
	rc = (ssize_t)r.listed;
out:
	for (i = 0; i < r.n; i++) {
		buf_free(&r.v[i].b);
		spool_names_free(r.v[i].segs, r.v[i].nsegs);
		free(r.v[i].sizes);
	}
	free(r.v);
	if (lfd != -1)
		close(lfd);
	close(afd);
	return rc;
}
