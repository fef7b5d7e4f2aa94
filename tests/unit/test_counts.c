/*
 * test_counts.c: unit tests for lib/spool/counts.c (counts.h): the CGI
 * programs' counters in the spool, by channel: none is zeroes, an
 * increment is one, processes that add at once lose none, a damaged
 * file counts again from what can be read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spool/counts.h"
#include "spooldir.h"
#include "testutil.h"

static void
test_none(void **state)
{
	const struct fixture	*f = *state;
	unsigned long long	 v[CHANNEL__MAX] = { 7, 7, 7, 7 };
	int			 c;

	assert_int_equal(counts_read(f->sp, COUNTS_CANCELED, v), 0);
	for (c = 0; c < CHANNEL__MAX; c++)
		assert_int_equal(v[c], 0);
}

static void
test_add(void **state)
{
	const struct fixture	*f = *state;
	unsigned long long	 v[CHANNEL__MAX];
	char			 path[512];
	struct stat		 st;

	assert_int_equal(counts_add(f->sp, COUNTS_CANCELED, CHANNEL_SMS), 0);
	assert_int_equal(counts_add(f->sp, COUNTS_CANCELED, CHANNEL_SMS), 0);
	assert_int_equal(counts_add(f->sp, COUNTS_CANCELED, CHANNEL_VOICE),
	    0);
	assert_int_equal(counts_read(f->sp, COUNTS_CANCELED, v), 0);
	assert_int_equal(v[CHANNEL_SMS], 2);
	assert_int_equal(v[CHANNEL_OTT], 0);
	assert_int_equal(v[CHANNEL_EMAIL], 0);
	assert_int_equal(v[CHANNEL_VOICE], 1);
	/* SPOOL/metrics/canceled, a line a channel, never resized. */
	snprintf(path, sizeof(path), "%s/metrics/canceled", f->root);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 30 * CHANNEL__MAX);
	errno = 0;
	assert_int_equal(counts_add(f->sp, COUNTS_CANCELED, CHANNEL__MAX),
	    -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(counts_add(f->sp, "../x", CHANNEL_SMS), -1);
}

/* Four processes adding 50 each at once: 200, none lost to a race. */
static void
test_concurrent(void **state)
{
	const struct fixture	*f = *state;
	unsigned long long	 v[CHANNEL__MAX];
	pid_t			 pid[4];
	int			 i, k, status, bad;

	for (i = 0; i < 4; i++) {
		if ((pid[i] = fork()) == 0) {
			for (bad = 0, k = 0; k < 50; k++)
				bad |= counts_add(f->sp, COUNTS_CANCELED,
				    CHANNEL_EMAIL) != 0;
			_exit(bad);
		}
		assert_true(pid[i] > 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(counts_read(f->sp, COUNTS_CANCELED, v), 0);
	assert_int_equal(v[CHANNEL_EMAIL], 200);
}

/* A file damaged by hand: its lines that parse count, the rest is 0. */
static void
test_damaged(void **state)
{
	const struct fixture	*f = *state;
	unsigned long long	 v[CHANNEL__MAX];
	char			 path[512];

	assert_int_equal(counts_add(f->sp, COUNTS_CANCELED, CHANNEL_SMS), 0);
	snprintf(path, sizeof(path), "%s/metrics/canceled", f->root);
	tu_write_text(path, "sms 41\nott x\ngarbage\nemail 5");
	assert_int_equal(counts_add(f->sp, COUNTS_CANCELED, CHANNEL_SMS), 0);
	assert_int_equal(counts_read(f->sp, COUNTS_CANCELED, v), 0);
	assert_int_equal(v[CHANNEL_SMS], 42);
	assert_int_equal(v[CHANNEL_OTT], 0);
	assert_int_equal(v[CHANNEL_EMAIL], 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_none, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_add, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_damaged, setup_spool,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
