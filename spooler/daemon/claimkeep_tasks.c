/*
 * claimkeep_tasks.c: the claim keeper's housekeeping thread (claimkeep.h,
 * claimkeep_impl.h), with a spool handle of its own: one housekeeping
 * run at a time (keeper_tidy), handed back to the loop with a byte on
 * the keeper's pipe.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/claimkeep.h"
#include "daemon/claimkeep_impl.h"

/* The housekeeping thread: the run given, then a byte on the pipe. */
void *
keeper_tidier_run(void *arg)
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
