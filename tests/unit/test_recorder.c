/*
 * test_recorder.c: msgspoold's recording thread on a spool of this host
 * (recorder.h), on a scratch spool: tasks run on a thread of their own
 * with a handle of their own, one at a time in the order given, each
 * handed back once through the pipe; recorder_finish runs every task
 * given before it returns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/recorder.h"
#include "spool/spool.h"
#include "testutil.h"

/* What a task saw, written by the recording thread. */
struct rec_task {
	pthread_mutex_t	*gate;		/* held by the test: the task waits */
	struct spool	*seen;		/* the handle it was given */
	pthread_t	 thread;
	int		 order;		/* its place among the tasks run */
	int		*ran;		/* how many ran before it, shared */
};

static void
rec_fn(struct spool *s, void *arg)
{
	struct rec_task	*t = arg;

	if (t->gate != NULL) {
		pthread_mutex_lock(t->gate);
		pthread_mutex_unlock(t->gate);
	}
	t->seen = s;
	t->thread = pthread_self();
	t->order = (*t->ran)++;
}

/* Wait (bounded) for the recorder's pipe to be readable. */
static int
wait_fd(struct recorder *r)
{
	struct pollfd	pfd = { .fd = recorder_fd(r), .events = POLLIN };

	return poll(&pfd, 1, 10000);
}

static void
test_order_and_handback(void **state)
{
	struct tu_spool	*f = *state;
	struct recorder	*r;
	struct rec_task	 t[5];
	pthread_mutex_t	 gate = PTHREAD_MUTEX_INITIALIZER;
	char		 err[256];
	void		*got;
	int		 ran = 0, i, back = 0;

	r = recorder_new(spool_root(f->sp), err, sizeof(err));
	assert_non_null(r);
	assert_true(recorder_idle(r));
	assert_null(recorder_recorded(r));
	memset(t, 0, sizeof(t));
	/* The first holds the thread until the others are queued. */
	pthread_mutex_lock(&gate);
	for (i = 0; i < 5; i++) {
		t[i].ran = &ran;
		t[i].gate = i == 0 ? &gate : NULL;
		t[i].order = -1;
		assert_int_equal(recorder_run(r, rec_fn, &t[i]), 0);
	}
	assert_false(recorder_idle(r));
	pthread_mutex_unlock(&gate);
	while (back < 5) {
		assert_true(wait_fd(r) > 0);
		while ((got = recorder_recorded(r)) != NULL) {
			/* Handed back in the order given, each once. */
			assert_ptr_equal(got, &t[back]);
			back++;
		}
	}
	assert_null(recorder_recorded(r));
	assert_true(recorder_idle(r));
	for (i = 0; i < 5; i++) {
		assert_int_equal(t[i].order, i);
		/* Not the caller's thread, nor its spool handle. */
		assert_false(pthread_equal(t[i].thread, pthread_self()));
		assert_non_null(t[i].seen);
		assert_ptr_not_equal(t[i].seen, f->sp);
		assert_string_equal(spool_root(t[i].seen), spool_root(f->sp));
	}
	recorder_finish(r);
	recorder_free(r);
}

static void
test_finish_runs_all(void **state)
{
	struct tu_spool	*f = *state;
	struct recorder	*r;
	struct rec_task	 t[8];
	pthread_mutex_t	 gate = PTHREAD_MUTEX_INITIALIZER;
	char		 err[256];
	int		 ran = 0, i, back = 0;

	r = recorder_new(spool_root(f->sp), err, sizeof(err));
	assert_non_null(r);
	memset(t, 0, sizeof(t));
	pthread_mutex_lock(&gate);
	for (i = 0; i < 8; i++) {
		t[i].ran = &ran;
		t[i].gate = i == 0 ? &gate : NULL;
		assert_int_equal(recorder_run(r, rec_fn, &t[i]), 0);
	}
	pthread_mutex_unlock(&gate);
	/* Every task given runs before finish returns, none after. */
	recorder_finish(r);
	assert_int_equal(ran, 8);
	while (recorder_recorded(r) != NULL)
		back++;
	assert_int_equal(back, 8);
	/* A finished recorder takes no more. */
	assert_int_equal(recorder_run(r, rec_fn, &t[0]), -1);
	recorder_free(r);
	recorder_finish(NULL);
	recorder_free(NULL);
}

static void
test_no_spool(void **state)
{
	char	err[256] = "";

	(void)state;
	assert_null(recorder_new("/nonexistent/msgspool-spool", err,
	    sizeof(err)));
	assert_true(err[0] != '\0');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_handback,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_finish_runs_all,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test(test_no_spool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
