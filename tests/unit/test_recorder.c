/*
 * test_recorder.c: msgspoold's recording thread on a spool of this host
 * (recorder.h), on a scratch spool: its work runs on a thread of its own
 * with a handle of its own, on every arg waiting at once, in the order
 * given; each arg is handed back once through the pipe; recorder_finish
 * does every arg given before it returns.
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
#include <time.h>
#include <unistd.h>

#include "daemon/recorder.h"
#include "spool/spool.h"
#include "testutil.h"

/* What the work saw of an arg, written by the recording thread. */
struct rec_task {
	pthread_mutex_t	*gate;		/* held by the test: the work waits */
	struct spool	*seen;		/* the handle it was given with */
	pthread_t	 thread;
	int		 order;		/* its place among the args done */
	int		 run;		/* which run of the work did it */
	int		*ran, *runs;	/* args done and runs so far, shared */
};

static void
rec_fn(struct spool *s, void **args, size_t n)
{
	struct rec_task	*t;
	size_t		 i;

	for (i = 0; i < n; i++) {
		t = args[i];
		if (t->gate != NULL) {
			pthread_mutex_lock(t->gate);
			pthread_mutex_unlock(t->gate);
		}
		t->seen = s;
		t->thread = pthread_self();
		t->order = (*t->ran)++;
		t->run = *t->runs;
	}
	if (n > 0)
		(*((struct rec_task *)args[0])->runs)++;
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
	int		 ran = 0, runs = 0, i, back = 0;

	r = recorder_new(spool_root(f->sp), rec_fn, 1, err, sizeof(err));
	assert_non_null(r);
	assert_true(recorder_idle(r));
	assert_null(recorder_recorded(r));
	memset(t, 0, sizeof(t));
	/* The first holds the thread until the others are waiting. */
	pthread_mutex_lock(&gate);
	t[0].gate = &gate;
	for (i = 0; i < 5; i++) {
		t[i].ran = &ran;
		t[i].runs = &runs;
		t[i].order = -1;
		assert_int_equal(recorder_run(r, &t[i]), 0);
		assert_false(recorder_idle(r));
	}
	/* Its run waits at the gate: busy since it began, within a bound. */
	for (i = 0; i < 10000 && recorder_busy_since(r) == 0; i++)
		usleep(1000);	/* a poll interval, not the wait */
	assert_true(recorder_busy_since(r) != 0);
	assert_true(time(NULL) - recorder_busy_since(r) < 60);
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
	assert_int_equal(recorder_busy_since(r), 0);
	for (i = 0; i < 5; i++) {
		assert_int_equal(t[i].order, i);
		/* Not the caller's thread, nor its spool handle. */
		assert_false(pthread_equal(t[i].thread, pthread_self()));
		assert_non_null(t[i].seen);
		assert_ptr_not_equal(t[i].seen, f->sp);
		assert_string_equal(spool_root(t[i].seen), spool_root(f->sp));
	}
	/* Those given while the first run waited went together after it:
	 * the work ran once or twice, never five times. */
	assert_true(runs <= 2);
	assert_int_equal(t[4].run, t[1].run);
	recorder_finish(r);
	recorder_free(r);
}

static void
test_finish_does_all(void **state)
{
	struct tu_spool	*f = *state;
	struct recorder	*r;
	struct rec_task	 t[300];
	pthread_mutex_t	 gate = PTHREAD_MUTEX_INITIALIZER;
	char		 err[256];
	int		 ran = 0, runs = 0, i, back = 0;

	r = recorder_new(spool_root(f->sp), rec_fn, 1, err, sizeof(err));
	assert_non_null(r);
	memset(t, 0, sizeof(t));
	pthread_mutex_lock(&gate);
	t[0].gate = &gate;
	for (i = 0; i < 300; i++) {
		t[i].ran = &ran;
		t[i].runs = &runs;
		assert_int_equal(recorder_run(r, &t[i]), 0);
	}
	pthread_mutex_unlock(&gate);
	/* Every arg given is done before finish returns, none after; more
	 * than a run takes (256) in more than one, in order. */
	recorder_finish(r);
	assert_int_equal(ran, 300);
	assert_true(runs >= 2);
	for (i = 0; i < 300; i++)
		assert_int_equal(t[i].order, i);
	while (recorder_recorded(r) != NULL)
		back++;
	assert_int_equal(back, 300);
	/* A finished recorder takes no more. */
	assert_int_equal(recorder_run(r, &t[0]), -1);
	recorder_free(r);
	recorder_finish(NULL);
	recorder_free(NULL);
}

static void
test_no_spool(void **state)
{
	char	err[256] = "";

	(void)state;
	assert_null(recorder_new("/nonexistent/msgspool-spool", rec_fn, 1, err,
	    sizeof(err)));
	assert_true(err[0] != '\0');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_handback,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_finish_does_all,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test(test_no_spool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
