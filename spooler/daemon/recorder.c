/*
 * recorder.c: msgspoold's recording thread on a spool of this host
 * (recorder.h).  One mutex guards the two queues, tasks waiting and
 * tasks done; the thread takes the tasks waiting (RECORDER_MAX at most)
 * at once and works without it.
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
#include "daemon/recorder.h"
#include "spool/list.h"
#include "spool/spool.h"

#define RECORDER_MAX	256	/* args given to one run of fn */

struct rtask {
	struct rtask	*next;
	void		*arg;
};

struct recorder {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	pthread_t	 thread;
	int		 started;
	int		 stop;		/* do what is left, then end */
	time_t		 busy;		/* when the run of fn began, 0: none */
	recorder_fn	 fn;
	struct spool	*spool;		/* the thread's own handle */
	struct rtask	*todo, **todo_tail;
	struct rtask	*done, **done_tail;
	int		 pipe[2];	/* a byte for each run of fn */
};

static void *
recorder_main(void *arg)
{
	struct recorder	*r = arg;
	struct rtask	*first, *t, **tail;
	void		*args[RECORDER_MAX];
	size_t		 n;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		if (r->todo == NULL) {
			if (r->stop)
				break;
			pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		/* Those waiting, in order, off the queue at once. */
		first = r->todo;
		for (n = 0, t = first, tail = &r->todo; t != NULL &&
		    n < RECORDER_MAX; t = t->next) {
			args[n++] = t->arg;
			tail = &t->next;
		}
		r->todo = *tail;
		*tail = NULL;
		if (r->todo == NULL)
			r->todo_tail = &r->todo;
		r->busy = time(NULL);
		pthread_mutex_unlock(&r->mu);
		r->fn(r->spool, args, n);
		pthread_mutex_lock(&r->mu);
		r->busy = 0;
		*r->done_tail = first;
		r->done_tail = tail;
		if (write(r->pipe[1], "r", 1) == -1 && errno != EAGAIN)
			log_warn("recorder: %s", strerror(errno));
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

struct recorder *
recorder_new(const char *root, recorder_fn fn, int local, char *err,
    size_t errlen)
{
	struct recorder	*r;
	int		 e, i;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->fn = fn;
	r->pipe[0] = r->pipe[1] = -1;
	r->todo_tail = &r->todo;
	r->done_tail = &r->done;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if ((r->spool = spool_open(root, 0, err, errlen)) == NULL)
		goto fail;
	list_keep(r->spool, local);
	/* Every state opened now, not later while a server is away. */
	for (i = 0; i < SPOOL__MAX; i++)
		spool_dirfd(r->spool, (enum spool_dir)i);
	if (pipe2(r->pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
		snprintf(err, errlen, "recorder: %s", strerror(errno));
		goto fail;
	}
	if ((e = pthread_create(&r->thread, NULL, recorder_main, r)) != 0) {
		snprintf(err, errlen, "recorder: %s", strerror(e));
		goto fail;
	}
	r->started = 1;
	return r;
fail:
	recorder_free(r);
	return NULL;
}

void
recorder_finish(struct recorder *r)
{
	if (r == NULL || !r->started)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	r->started = 0;
}

static void
tasks_free(struct rtask *t)
{
	struct rtask	*next;

	for (; t != NULL; t = next) {
		next = t->next;
		free(t);
	}
}

void
recorder_free(struct recorder *r)
{
	if (r == NULL)
		return;
	recorder_finish(r);
	/* Tasks never done or never collected: their args are the caller's. */
	tasks_free(r->todo);
	tasks_free(r->done);
	if (r->pipe[0] != -1)
		close(r->pipe[0]);
	if (r->pipe[1] != -1)
		close(r->pipe[1]);
	spool_free(r->spool);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

int
recorder_run(struct recorder *r, void *arg)
{
	struct rtask	*t;

	if (!r->started || (t = calloc(1, sizeof(*t))) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	t->arg = arg;
	pthread_mutex_lock(&r->mu);
	*r->todo_tail = t;
	r->todo_tail = &t->next;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

void *
recorder_recorded(struct recorder *r)
{
	struct rtask	*t;
	void		*arg = NULL;
	char		 buf[64];

	while (read(r->pipe[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&r->mu);
	if ((t = r->done) != NULL && (r->done = t->next) == NULL)
		r->done_tail = &r->done;
	pthread_mutex_unlock(&r->mu);
	if (t != NULL) {
		arg = t->arg;
		free(t);
	}
	return arg;
}

int
recorder_idle(struct recorder *r)
{
	int	idle;

	pthread_mutex_lock(&r->mu);
	idle = r->todo == NULL && !r->busy;
	pthread_mutex_unlock(&r->mu);
	return idle;
}

time_t
recorder_busy_since(struct recorder *r)
{
	time_t	since;

	pthread_mutex_lock(&r->mu);
	since = r->busy;
	pthread_mutex_unlock(&r->mu);
	return since;
}

int
recorder_fd(const struct recorder *r)
{
	return r->pipe[0];
}
