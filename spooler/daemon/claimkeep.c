/*
 * claimkeep.c: the claim keeper (claimkeep.h): made and freed, and its
 * proving thread with the claims it keeps.  One mutex guards the list;
 * the thread takes a snapshot of the work under it, does the blocking
 * calls without it, and writes the results back under it, so the event
 * loop only ever waits for the mutex, never for the spool.  The other
 * threads do the same: the claiming one is claimkeep_claim.c's, the
 * housekeeping one claimkeep_tasks.c's (claimkeep_impl.h).  Outcomes
 * are written by the daemon's recorder (recorder.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/claimkeep.h"
#include "daemon/claimkeep_impl.h"
#include "spool/spool.h"

/* Take what is due out from under the mutex, work, put results back. */
static void *
keeper_run(void *arg)
{
	struct keeper	 *k = arg;
	struct kept	 *c, **pp, *work[256];
	struct timespec	  ts;
	time_t		  now;
	size_t		  n, i;
	int		  rc[256], e;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		now = time(NULL);
		n = 0;
		for (c = k->list; c != NULL && n < 256; c = c->next)
			if (!c->busy && (c->released || (!c->lost &&
			    c->due <= now) || k->stop)) {
				c->busy = 1;
				work[n++] = c;
			}
		if (n == 0) {
			if (k->stop)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&k->cv, &k->mu, &ts);
			continue;
		}
		k->beat_since = now;
		pthread_mutex_unlock(&k->mu);
		for (i = 0; i < n; i++) {
			c = work[i];
			rc[i] = 0;
			if (c->released || k->stop)
				spool_release(k->spool, c->name, c->fd);
			else if ((rc[i] = spool_claim_renew(c->fd)) == -1) {
				e = errno;
				log_err("%s: claim lost (%s): another host may "
				    "have it; this one records nothing",
				    c->name, strerror(e));
			}
		}
		pthread_mutex_lock(&k->mu);
		k->beat_since = 0;
		now = time(NULL);
		for (i = 0; i < n; i++) {
			c = work[i];
			c->busy = 0;
			if (c->released || k->stop) {
				for (pp = &k->list; *pp != c; pp = &(*pp)->next)
					;
				*pp = c->next;
				free(c);
				continue;
			}
			if (rc[i] == -1)
				c->lost = 1;
			else
				c->proved = now;
			c->due = now + KEEP_EVERY;
		}
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int
keeper_stuck(struct keeper *k, time_t now)
{
	int	stuck;

	pthread_mutex_lock(&k->mu);
	stuck = (k->beat_since && now - k->beat_since >= KEEP_STUCK) ||
	    (k->claim_since && now - k->claim_since >= KEEP_STUCK);
	pthread_mutex_unlock(&k->mu);
	return stuck;
}

struct keeper *
keeper_new(const char *root, keep_route_fn route, char *err, size_t errlen)
{
	struct keeper	*k;
	int		 i;

	if ((k = calloc(1, sizeof(*k))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->pipe[0] = k->pipe[1] = -1;
	k->route = route;
	k->ready_tail = &k->ready;
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	pthread_cond_init(&k->ccv, NULL);
	pthread_cond_init(&k->tcv, NULL);
	if ((k->spool = spool_open(root, 0, err, errlen)) == NULL ||
	    (k->cspool = spool_open(root, 0, err, errlen)) == NULL ||
	    (k->tspool = spool_open(root, 0, err, errlen)) == NULL)
		goto fail;
	if (pipe2(k->pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	/* Every state opened now: the handles are only read from here. */
	for (i = 0; i < SPOOL__MAX; i++) {
		spool_dirfd(k->spool, (enum spool_dir)i);
		spool_dirfd(k->cspool, (enum spool_dir)i);
		spool_dirfd(k->tspool, (enum spool_dir)i);
	}
	if ((errno = pthread_create(&k->thread, NULL, keeper_run, k)) != 0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	k->started = 1;
	if ((errno = pthread_create(&k->claimer, NULL, keeper_claimer_run,
	    k)) != 0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	k->started = 2;
	if ((errno = pthread_create(&k->tidier, NULL, keeper_tidier_run,
	    k)) != 0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	k->started = 3;
	return k;
fail:
	keeper_free(k);
	return NULL;
}

void
keeper_free(struct keeper *k)
{
	struct claimed	*c;

	if (k == NULL)
		return;
	/* Housekeeping under way ends; none not begun begins. */
	pthread_mutex_lock(&k->mu);
	k->tstop = 1;
	pthread_cond_signal(&k->tcv);
	pthread_mutex_unlock(&k->mu);
	if (k->started >= 3)
		pthread_join(k->tidier, NULL);
	pthread_mutex_lock(&k->mu);
	k->cstop = 1;
	pthread_cond_broadcast(&k->ccv);
	pthread_mutex_unlock(&k->mu);
	if (k->started >= 2)
		pthread_join(k->claimer, NULL);
	/* Claimed, never started: back to new/ for any daemon. */
	while ((c = k->ready) != NULL) {
		k->ready = c->next;
		spool_move(k->cspool, SPOOL_CUR, SPOOL_NEW, c->name);
		keeper_release(c->kept);
		json_decref(c->doc);
		json_decref(c->sup);
		free(c);
	}
	/* Then every claim still kept is ended by the proving thread. */
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	if (k->started >= 1)
		pthread_join(k->thread, NULL);
	spool_free(k->spool);
	spool_free(k->cspool);
	spool_free(k->tspool);
	free(k->tidy);
	if (k->pipe[0] != -1)
		close(k->pipe[0]);
	if (k->pipe[1] != -1)
		close(k->pipe[1]);
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cv);
	pthread_cond_destroy(&k->ccv);
	pthread_cond_destroy(&k->tcv);
	free(k);
}

int
keeper_fd(struct keeper *k)
{
	return k->pipe[0];
}

struct kept *
keeper_add(struct keeper *k, const char *name, int fd)
{
	struct kept	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		close(fd);
		return NULL;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->k = k;
	c->fd = fd;
	/* Just locked: that is proof enough for now. */
	c->proved = time(NULL);
	c->due = c->proved + KEEP_EVERY;
	pthread_mutex_lock(&k->mu);
	c->next = k->list;
	k->list = c;
	pthread_mutex_unlock(&k->mu);
	return c;
}

enum keep_state
keeper_state(struct keeper *k, struct kept *c, time_t now)
{
	enum keep_state	st;

	pthread_mutex_lock(&k->mu);
	st = c->lost ? KEEP_LOST : now - c->proved >= KEEP_STALE ?
	    KEEP_DOUBT : KEEP_OK;
	pthread_mutex_unlock(&k->mu);
	return st;
}

int
keeper_prove(struct kept *c)
{
	struct keeper	*k = c->k;
	time_t		 now;
	int		 rc, e;

	/* The fd stays open: only a release, after this, closes it. */
	rc = spool_claim_renew(c->fd);
	e = errno;
	now = time(NULL);
	pthread_mutex_lock(&k->mu);
	if (rc == -1)
		c->lost = 1;
	else if (!c->lost)
		c->proved = now;
	rc = c->lost ? -1 : 0;
	pthread_mutex_unlock(&k->mu);
	errno = e;
	return rc;
}

void
keeper_poke(struct keeper *k, struct kept *c)
{
	pthread_mutex_lock(&k->mu);
	c->due = 0;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
}

void
keeper_release(struct kept *c)
{
	struct keeper	*k;

	if (c == NULL)
		return;
	k = c->k;
	pthread_mutex_lock(&k->mu);
	c->released = 1;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
}
