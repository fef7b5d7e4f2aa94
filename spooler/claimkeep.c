/*
 * claimkeep.c: the claim keeper (claimkeep.h).  One mutex guards the
 * list; the thread takes a snapshot of the work under it, does the
 * blocking calls without it, and writes the results back under it, so
 * the event loop only ever waits for the mutex, never for the spool.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "claimkeep.h"
#include "log.h"
#include "spool.h"

struct kept {
	struct kept	*next;
	struct keeper	*k;
	char		 name[SPOOL_NAME_MAX];
	int		 fd;
	time_t		 proved;	/* last proof that succeeded */
	time_t		 due;		/* next proof */
	int		 lost;
	int		 released;	/* the loop let go: end it */
	int		 busy;		/* the thread works on it */
};

struct keeper {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	pthread_t	 thread;
	struct spool	*spool;
	struct kept	*list;
	int		 stop;
};

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

struct keeper *
keeper_new(const char *root, char *err, size_t errlen)
{
	struct keeper	*k;

	if ((k = calloc(1, sizeof(*k))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((k->spool = spool_open(root, 0, err, errlen)) == NULL) {
		free(k);
		return NULL;
	}
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	if ((errno = pthread_create(&k->thread, NULL, keeper_run, k)) != 0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		spool_free(k->spool);
		pthread_mutex_destroy(&k->mu);
		pthread_cond_destroy(&k->cv);
		free(k);
		return NULL;
	}
	return k;
}

void
keeper_free(struct keeper *k)
{
	if (k == NULL)
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL);
	spool_free(k->spool);
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cv);
	free(k);
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
