/*
 * claimkeep_claim.c: the claim keeper's claiming thread (claimkeep.h,
 * claimkeep_impl.h): new/ listed from a random place, its messages
 * claimed as many as the loop asks for (those of a route at its cap
 * left in new/), each kept by the proving thread from then on; dead
 * claims returned with spool_recover.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/claimkeep.h"
#include "daemon/claimkeep_impl.h"
#include "spool/spool.h"
#include "spool/suppress.h"

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
	/* Here, so that the loop makes no NFS call for it. */
	c->sup = suppress_doc(k->cspool, doc);
	c->superr = c->sup == NULL ? errno : 0;
	if ((c->kept = keeper_add(k, name, fd)) == NULL) {
		json_decref(c->sup);
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
void *
keeper_claimer_run(void *arg)
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
