/*
 * hold.c: new messages held in tmp/ until their request is done
 * (spool.h, spool_hold): named, published into new/ or deferred/ at
 * once, or discarded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "base/ulid.h"
#include "spool/dsync.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

void
spool_hold(struct spool *s, struct spool_hold *hold)
{
	s->hold = hold;
}

int
spool_hold_add(struct spool_hold *h, enum spool_dir dir, const char *name)
{
	struct spool_held	*v;
	size_t			 cap;

	if ((dir != SPOOL_NEW && dir != SPOOL_DEFERRED) ||
	    strlen(name) + strlen(SPOOL_HELD_SUFFIX) >= SPOOL_NAME_MAX ||
	    strchr(name, '/') != NULL || !ulid_prefix(name))
		return -1;
	if (h->n == h->cap) {
		cap = h->cap ? h->cap * 2 : 16;
		if ((v = reallocarray(h->v, cap, sizeof(*v))) == NULL)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n].dir = dir;
	snprintf(h->v[h->n].name, sizeof(h->v[h->n].name), "%s", name);
	h->n++;
	return 0;
}

int
spool_hold_publish(struct spool *s, const struct spool_hold *h)
{
	char	tmp[SPOOL_NAME_MAX + sizeof(SPOOL_HELD_SUFFIX)];
	int	tfd, d, e = 0, used[SPOOL__MAX] = { 0 };
	size_t	i;

	if (h->n == 0)
		return 0;
	if ((tfd = spool_statefd(s, SPOOL_TMP)) == -1)
		return -1;
	for (i = 0; i < h->n; i++) {
		if ((d = spool_statefd(s, h->v[i].dir)) == -1) {
			e = errno;
			continue;
		}
		snprintf(tmp, sizeof(tmp), "%s%s", h->v[i].name, SPOOL_HELD_SUFFIX);
		/* Gone: published before (a retry completing a request). */
		if (renameat(tfd, tmp, d, h->v[i].name) == -1 &&
		    errno != ENOENT) {
			e = errno;
			log_err("spool: %s/tmp/%s: %s", s->root, tmp,
			    strerror(e));
			continue;
		}
		used[h->v[i].dir] = 1;
		FAULT("hold: published one");
	}
	for (d = 0; d < SPOOL__MAX; d++)
		if (used[d] && spool_syncdir(s, d) == -1) {
			e = errno;
			log_err("spool: fsync of %s/%s: %s", s->root,
			    spool_dirnames[d], strerror(e));
		}
	if (e != 0) {
		errno = e;
		return -1;
	}
	return 0;
}

void
spool_hold_discard(struct spool *s, const struct spool_hold *h)
{
	char	tmp[SPOOL_NAME_MAX + sizeof(SPOOL_HELD_SUFFIX)];
	int	tfd;
	size_t	i;

	if ((tfd = spool_statefd(s, SPOOL_TMP)) == -1)
		return;
	for (i = 0; i < h->n; i++) {
		snprintf(tmp, sizeof(tmp), "%s%s", h->v[i].name, SPOOL_HELD_SUFFIX);
		unlinkat(tfd, tmp, 0);
	}
}

void
spool_hold_free(struct spool_hold *h)
{
	if (h == NULL)
		return;
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
