/*
 * claimkeep.c: the claim keeper (claimkeep.h).  One mutex guards the
 * list; the thread takes a snapshot of the work under it, does the
 * blocking calls without it, and writes the results back under it, so
 * the event loop only ever waits for the mutex, never for the spool.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
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

	/* The claiming thread, its own spool handle and work. */
	pthread_t	 claimer;
	pthread_cond_t	 ccv;
	struct spool	*cspool;
	size_t		 want;		/* claims asked for */
	int		 dirty;		/* new/ may have changed */
	keep_route_fn	 route;
	char		 full[KEEP_FULL_MAX];	/* routes at their cap: names,
					   each ended by a NUL, then "" */
	struct claimed	*ready, **ready_tail;
	size_t		 nready;
	int		 pipe[2];	/* a byte per claim made ready */
	int		 started;	/* which threads run: 1 to 4 */
	int		 cstop;		/* the claiming thread is to stop */

	/* The recording thread: tasks in order, done ones back. */
	pthread_t	 recorder;
	pthread_cond_t	 rcv;
	struct spool	*rspool;
	struct task	*tasks, **tasks_tail, *done, **done_tail;
	int		 rstop;

	/* The housekeeping thread: one run at a time, collected once. */
	pthread_t	 tidier;
	pthread_cond_t	 tcv;
	struct spool	*tspool;
	struct task	*tidy;		/* given, running until tidied */
	int		 tidied;	/* it ran to its end */
	int		 tstop;

	/* When each thread entered the call it is in (0: none). */
	time_t		 beat_since, claim_since, rec_since;
};

struct task {
	struct task	*next;
	void		(*fn)(struct spool *, void *);
	void		*arg;
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

/* Rotate v (n names) left by r places. */
static void
rotate(char **v, size_t n, size_t r)
{
	char	**t;

	if (r == 0 || (t = reallocarray(NULL, r, sizeof(*t))) == NULL)
		return;
	memcpy(t, v, r * sizeof(*t));
	memmove(v, v + r, (n - r) * sizeof(*v));
	memcpy(v + n - r, t, r * sizeof(*t));
	free(t);
}

/* Whether name is one of the list full (names ended by NUL, then ""). */
static int
in_full(const char *full, const char *name)
{
	for (; *full != '\0'; full += strlen(full) + 1)
		if (strcmp(full, name) == 0)
			return 1;
	return 0;
}

/*
 * Claim one name of new/ for the loop, unless its route is one of full:
 * 1 when it was claimed, 0 when not, -1 when its route is full.
 */
static int
claim_one(struct keeper *k, const char *name, const char *full)
{
	struct claimed	*c;
	json_t		*doc = NULL;
	const char	*route;
	char		 err[512] = "", rbuf[64];
	time_t		 t0 = time(NULL);
	int		 fd, at_cap;

	/* Read first only when a route is full: one read a message then. */
	if (full[0] != '\0' && k->route != NULL && (doc =
	    spool_load(k->cspool, SPOOL_NEW, name, err, sizeof(err))) != NULL) {
		route = k->route(doc, rbuf, sizeof(rbuf));
		at_cap = route != NULL && in_full(full, route);
		json_decref(doc);
		doc = NULL;
		if (at_cap)
			return -1;
	}
	err[0] = '\0';

	if ((fd = spool_claim(k->cspool, name, &doc, err, sizeof(err))) ==
	    -1) {
		/* Gone, or another daemon's: not an error.  Set aside:
		 * logged. */
		if (errno != ENOENT && errno != EBUSY && errno != EAGAIN &&
		    errno != EINVAL)
			log_err("spool: cannot claim %s: %s", name,
			    strerror(errno));
		return 0;
	}
	/*
	 * Before it is sent: a claim that took long (the server away) may
	 * have been given to another host meanwhile.
	 */
	if (time(NULL) - t0 >= KEEP_STALE && spool_claim_renew(fd) == -1) {
		log_err("%s: claim lost while it was taken (%s): not sending",
		    name, strerror(errno));
		close(fd);
		json_decref(doc);
		return 0;
	}
	if (doc == NULL) {
		log_err("%s; moved to failed/", err);
		spool_move(k->cspool, SPOOL_CUR, SPOOL_FAILED, name);
		spool_release(k->cspool, name, fd);
		return 0;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		spool_move(k->cspool, SPOOL_CUR, SPOOL_NEW, name);
		spool_release(k->cspool, name, fd);
		json_decref(doc);
		return 0;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->doc = doc;
	if ((c->kept = keeper_add(k, name, fd)) == NULL) {
		json_decref(doc);
		free(c);
		return 0;
	}
	pthread_mutex_lock(&k->mu);
	*k->ready_tail = c;
	k->ready_tail = &c->next;
	k->nready++;
	if (k->want > 0)
		k->want--;
	pthread_mutex_unlock(&k->mu);
	if (write(k->pipe[1], "c", 1) == -1 && errno != EAGAIN)
		log_warn("claim keeper: %s", strerror(errno));
	return 1;
}

/*
 * The claiming thread: new/ listed afresh when it may have changed (and
 * every KEEP_RESCAN_EVERY seconds while claims are wanted), names taken
 * from the listing as claims are asked for; dead claims returned every
 * KEEP_RECOVER_EVERY seconds.
 */
static void *
claimer_run(void *arg)
{
	struct keeper	 *k = arg;
	struct timespec	  ts;
	char		**names = NULL, full[KEEP_FULL_MAX];
	ssize_t		  n = 0, i = 0;
	time_t		  now, listed = 0, next_recover = 0;
	size_t		  back, skipped = 0;
	int		  relist;

	pthread_mutex_lock(&k->mu);
	while (!k->cstop) {
		now = time(NULL);
		if (now >= next_recover) {
			k->claim_since = now;
			pthread_mutex_unlock(&k->mu);
			back = spool_recover(k->cspool);
			pthread_mutex_lock(&k->mu);
			k->claim_since = 0;
			if (back > 0)
				k->dirty = 1;
			next_recover = now + KEEP_RECOVER_EVERY;
		}
		if (k->want == 0) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&k->ccv, &k->mu, &ts);
			continue;
		}
		relist = i >= n || ((k->dirty || now - listed >=
		    KEEP_RESCAN_EVERY) && now != listed);
		if (relist) {
			k->dirty = 0;
			k->claim_since = now;
			pthread_mutex_unlock(&k->mu);
			spool_names_free(names, n > 0 ? (size_t)n : 0);
			names = NULL;
			i = skipped = 0;
			if ((n = spool_list(k->cspool, SPOOL_NEW, &names)) ==
			    -1) {
				log_err("spool: new/: %s", strerror(errno));
				n = 0;
			}
			listed = time(NULL);
			/*
			 * From a random place, round to it: daemons on other
			 * hosts then seldom race for the same files.
			 */
			if (n > 1)
				rotate(names, (size_t)n,
				    arc4random_uniform((uint32_t)n));
			pthread_mutex_lock(&k->mu);
			k->claim_since = 0;
		}
		while (i < n && k->want > 0 && !k->cstop) {
			k->claim_since = time(NULL);
			memcpy(full, k->full, sizeof(full));
			pthread_mutex_unlock(&k->mu);
			/* Bounded: a long queue of a full route is not read
			 * through on every listing. */
			if (claim_one(k, names[i++], full) == -1 &&
			    ++skipped >= KEEP_SKIP_MAX)
				i = n;
			pthread_mutex_lock(&k->mu);
			k->claim_since = 0;
		}
		if (i >= n && k->want > 0 && !k->dirty && !k->cstop) {
			/* Nothing left to try: wait for news or the rescan. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += KEEP_RESCAN_EVERY;
			pthread_cond_timedwait(&k->ccv, &k->mu, &ts);
		}
	}
	pthread_mutex_unlock(&k->mu);
	spool_names_free(names, n > 0 ? (size_t)n : 0);
	return NULL;
}

/* The recording thread: each task in order, then handed back. */
static void *
recorder_run(void *arg)
{
	struct keeper	*k = arg;
	struct task	*t;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		if ((t = k->tasks) == NULL) {
			if (k->rstop)
				break;
			pthread_cond_wait(&k->rcv, &k->mu);
			continue;
		}
		if ((k->tasks = t->next) == NULL)
			k->tasks_tail = &k->tasks;
		k->rec_since = time(NULL);
		pthread_mutex_unlock(&k->mu);
		t->fn(k->rspool, t->arg);
		pthread_mutex_lock(&k->mu);
		k->rec_since = 0;
		t->next = NULL;
		*k->done_tail = t;
		k->done_tail = &t->next;
		if (write(k->pipe[1], "r", 1) == -1 && errno != EAGAIN)
			log_warn("claim keeper: %s", strerror(errno));
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int
keeper_record(struct keeper *k, void (*fn)(struct spool *, void *),
    void *arg)
{
	struct task	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -1;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&k->mu);
	*k->tasks_tail = t;
	k->tasks_tail = &t->next;
	pthread_cond_signal(&k->rcv);
	pthread_mutex_unlock(&k->mu);
	return 0;
}

void *
keeper_recorded(struct keeper *k)
{
	struct task	*t;
	void		*arg = NULL;
	char		 buf[64];

	while (read(k->pipe[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&k->mu);
	if ((t = k->done) != NULL) {
		if ((k->done = t->next) == NULL)
			k->done_tail = &k->done;
		arg = t->arg;
		free(t);
	}
	pthread_mutex_unlock(&k->mu);
	return arg;
}

/* The housekeeping thread: the run given, then a byte on the pipe. */
static void *
tidier_run(void *arg)
{
	struct keeper	*k = arg;
	struct task	*t;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		if (k->tstop)
			break;
		if ((t = k->tidy) == NULL || k->tidied) {
			pthread_cond_wait(&k->tcv, &k->mu);
			continue;
		}
		pthread_mutex_unlock(&k->mu);
		t->fn(k->tspool, t->arg);
		pthread_mutex_lock(&k->mu);
		k->tidied = 1;
		if (write(k->pipe[1], "t", 1) == -1 && errno != EAGAIN)
			log_warn("claim keeper: %s", strerror(errno));
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int
keeper_tidy(struct keeper *k, void (*fn)(struct spool *, void *), void *arg)
{
	struct task	*t;

	pthread_mutex_lock(&k->mu);
	if (k->tidy != NULL) {
		pthread_mutex_unlock(&k->mu);
		return 1;
	}
	pthread_mutex_unlock(&k->mu);
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -1;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&k->mu);
	k->tidy = t;
	k->tidied = 0;
	pthread_cond_signal(&k->tcv);
	pthread_mutex_unlock(&k->mu);
	return 0;
}

void *
keeper_tidied(struct keeper *k)
{
	struct task	*t = NULL;
	void		*arg = NULL;
	char		 buf[64];

	while (read(k->pipe[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&k->mu);
	if (k->tidy != NULL && k->tidied) {
		t = k->tidy;
		k->tidy = NULL;
		k->tidied = 0;
	}
	pthread_mutex_unlock(&k->mu);
	if (t != NULL) {
		arg = t->arg;
		free(t);
	}
	return arg;
}

int
keeper_stuck(struct keeper *k, time_t now)
{
	int	stuck;

	pthread_mutex_lock(&k->mu);
	stuck = (k->beat_since && now - k->beat_since >= KEEP_STUCK) ||
	    (k->claim_since && now - k->claim_since >= KEEP_STUCK) ||
	    (k->rec_since && now - k->rec_since >= KEEP_STUCK);
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
	k->tasks_tail = &k->tasks;
	k->done_tail = &k->done;
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	pthread_cond_init(&k->ccv, NULL);
	pthread_cond_init(&k->rcv, NULL);
	pthread_cond_init(&k->tcv, NULL);
	if ((k->spool = spool_open(root, 0, err, errlen)) == NULL ||
	    (k->cspool = spool_open(root, 0, err, errlen)) == NULL ||
	    (k->rspool = spool_open(root, 0, err, errlen)) == NULL ||
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
		spool_dirfd(k->rspool, (enum spool_dir)i);
		spool_dirfd(k->tspool, (enum spool_dir)i);
	}
	if ((errno = pthread_create(&k->thread, NULL, keeper_run, k)) != 0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	k->started = 1;
	if ((errno = pthread_create(&k->claimer, NULL, claimer_run, k)) !=
	    0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	k->started = 2;
	if ((errno = pthread_create(&k->recorder, NULL, recorder_run, k)) !=
	    0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	k->started = 3;
	if ((errno = pthread_create(&k->tidier, NULL, tidier_run, k)) != 0) {
		snprintf(err, errlen, "claim keeper: %s", strerror(errno));
		goto fail;
	}
	k->started = 4;
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
	if (k->started >= 4)
		pthread_join(k->tidier, NULL);
	/* What is being recorded first: its claims are still kept. */
	pthread_mutex_lock(&k->mu);
	k->rstop = 1;
	pthread_cond_signal(&k->rcv);
	pthread_mutex_unlock(&k->mu);
	if (k->started >= 3)
		pthread_join(k->recorder, NULL);
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
	spool_free(k->rspool);
	spool_free(k->tspool);
	free(k->tidy);
	if (k->pipe[0] != -1)
		close(k->pipe[0]);
	if (k->pipe[1] != -1)
		close(k->pipe[1]);
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cv);
	pthread_cond_destroy(&k->ccv);
	pthread_cond_destroy(&k->rcv);
	pthread_cond_destroy(&k->tcv);
	free(k);
}

void
keeper_want(struct keeper *k, size_t room, int dirty,
    const char *const *full, size_t nfull)
{
	char	buf[KEEP_FULL_MAX];
	size_t	i, off = 0, l;

	for (i = 0; i < nfull; i++) {
		if ((l = strlen(full[i]) + 1) >= sizeof(buf) - off)
			break;
		memcpy(buf + off, full[i], l);
		off += l;
	}
	buf[off] = '\0';
	pthread_mutex_lock(&k->mu);
	memcpy(k->full, buf, off + 1);
	k->want = room > k->nready ? room - k->nready : 0;
	if (dirty)
		k->dirty = 1;
	if (k->want > 0)
		pthread_cond_signal(&k->ccv);
	pthread_mutex_unlock(&k->mu);
}

struct claimed *
keeper_take(struct keeper *k)
{
	struct claimed	*c;
	char		 buf[64];

	while (read(k->pipe[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&k->mu);
	if ((c = k->ready) != NULL) {
		if ((k->ready = c->next) == NULL)
			k->ready_tail = &k->ready;
		k->nready--;
		c->next = NULL;
	}
	pthread_mutex_unlock(&k->mu);
	return c;
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
