/*
 * claimkeep_impl.h: what the claim keeper's files share, and nothing
 * else sees: the keeper, a claim it keeps, a task for a thread, and the
 * threads' bodies keeper_new starts.
 *
 *	claimkeep.c		the keeper made and freed; the proving thread
 *				and the claims it keeps (keeper_add ...)
 *	claimkeep_claim.c	the claiming thread (keeper_want, keeper_take)
 *	claimkeep_tasks.c	the housekeeping thread (keeper_tidy)
 */
#ifndef CLAIMKEEP_IMPL_H
#define CLAIMKEEP_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "daemon/claimkeep.h"
#include "spool/spool.h"

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
	int		 started;	/* which threads run: 1 to 3 */
	int		 cstop;		/* the claiming thread is to stop */

	/* The housekeeping thread: one run at a time, collected once. */
	pthread_t	 tidier;
	pthread_cond_t	 tcv;
	struct spool	*tspool;
	struct task	*tidy;		/* given, running until tidied */
	int		 tidied;	/* it ran to its end */
	int		 tstop;

	/* When each thread entered the call it is in (0: none). */
	time_t		 beat_since, claim_since;
};

struct task {
	struct task	*next;
	void		(*fn)(struct spool *, void *);
	void		*arg;
};

/*
 * The bodies of the claiming and housekeeping threads, arg
 * the keeper (pthread_create's start routines).
 */
void		*keeper_claimer_run(void *arg);
void		*keeper_tidier_run(void *arg);

#endif
