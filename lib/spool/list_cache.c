/*
 * list_cache.c: the segment names of the clients' lists kept between
 * appends by a process that appends for long (list_keep; msgspoold), so
 * that a message's line late behind newer ones (an outcome, a receipt)
 * finds its segment without a listing of the directory each time
 * (msgspool-spool(5), Lists).
 *
 * The names kept for a client stay true while its head's newest segment
 * is the newest kept and its generation the same: segments are only
 * made at the top (list_append, under the head's lock), and below it
 * only removed (empty ones, by the compaction, under the same lock).  A
 * kept segment that is gone is found so by its open, which never makes
 * one here; the names are then listed again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/valid.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/list_impl.h"

#define LCACHE_CLIENTS	8	/* clients kept, the least used replaced */

struct lcache_ent {
	char		  client[CLIENT_ID_MAX + 1];	/* "": unused */
	long long	  gen;
	char		(*segs)[SPOOL_ID_LEN + 1];	/* ascending */
	size_t		  n;
	unsigned long	  used;
};

struct list_cache {
	struct lcache_ent e[LCACHE_CLIENTS];
	unsigned long	  tick;
};

void
list_keep(struct spool *s, int on)
{
	s->lkeep = on;
	if (!on) {
		list_cache_free(s->lcache);
		s->lcache = NULL;
	}
}

void
list_cache_free(struct list_cache *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < LCACHE_CLIENTS; i++)
		free(c->e[i].segs);
	free(c);
}

static void
ent_drop(struct lcache_ent *e)
{
	free(e->segs);
	e->segs = NULL;
	e->n = 0;
	e->client[0] = '\0';
}

/* client's kept names, listed again when not true for h; NULL: none. */
static struct lcache_ent *
ent_get(struct spool *s, const char *client, int cfd, const struct head *h)
{
	struct list_cache	*c;
	struct lcache_ent	*e = NULL;
	char			**v;
	ssize_t			  n, i;
	size_t			  k;

	if (s->lcache == NULL &&
	    (s->lcache = calloc(1, sizeof(*s->lcache))) == NULL)
		return NULL;
	c = s->lcache;
	for (k = 0; k < LCACHE_CLIENTS; k++)
		if (strcmp(c->e[k].client, client) == 0) {
			e = &c->e[k];
			break;
		}
	if (e != NULL && e->gen == h->gen && e->n > 0 &&
	    strcmp(e->segs[e->n - 1], h->seg) == 0) {
		e->used = ++c->tick;
		return e;
	}
	if (e == NULL)
		for (k = 0, e = &c->e[0]; k < LCACHE_CLIENTS; k++)
			if (c->e[k].used < e->used)
				e = &c->e[k];
	ent_drop(e);
	if ((n = list_seg_list(cfd, h->gen, &v)) == -1)
		return NULL;
	/* Newest first there, ascending here. */
	if (n > 0 && (e->segs = calloc((size_t)n, sizeof(*e->segs))) != NULL) {
		for (i = 0; i < n; i++)
			snprintf(e->segs[n - 1 - i], sizeof(e->segs[0]), "%s",
			    v[i]);
		e->n = (size_t)n;
		e->gen = h->gen;
		snprintf(e->client, sizeof(e->client), "%s", client);
		e->used = ++c->tick;
	}
	spool_names_free(v, (size_t)n);
	/* Only true when the newest listed is the head's. */
	if (e->n == 0 || strcmp(e->segs[e->n - 1], h->seg) != 0) {
		ent_drop(e);
		return NULL;
	}
	return e;
}

/* The greatest kept segment not above id, or the least: its index. */
static size_t
ent_find(const struct lcache_ent *e, const char *id)
{
	size_t	lo = 0, hi = e->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(e->segs[mid], id) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? lo - 1 : 0;
}

int
list_seg_open_old(struct spool *s, const char *client, int cfd,
    const struct head *h, const char *id, char *seg, char *next,
    struct seg_walk *walk)
{
	struct lcache_ent	*e;
	char			 name[32 + SPOOL_ID_LEN];
	size_t			 k;
	int			 fd, tries;

	for (tries = 0; s->lkeep && tries < 2; tries++) {
		if ((e = ent_get(s, client, cfd, h)) == NULL)
			break;
		k = ent_find(e, id);
		memcpy(seg, e->segs[k], SPOOL_ID_LEN + 1);
		if (k + 1 < e->n)
			memcpy(next, e->segs[k + 1], SPOOL_ID_LEN + 1);
		else
			next[0] = '\0';
		list_seg_name(name, sizeof(name), h->gen, seg);
		/* Never made here: one that is gone is listed again. */
		if ((fd = openat(cfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW |
		    O_CLOEXEC)) != -1 || errno != ENOENT)
			return fd;
		ent_drop(e);
	}
	if (list_seg_find_back(cfd, h->gen, h->seg, id, seg, next, walk) ==
	    -1)
		return -1;
	return list_seg_open_append(cfd, h->gen, seg, "");
}
