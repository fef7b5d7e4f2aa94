/*
 * test_util.c: unit tests for lib/util.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static void
test_seterr_formats(void **state)
{
	char	err[16];

	(void)state;
	util_seterr(err, sizeof(err), "%s:%d: %s", "f.conf", 12, "bad");
	assert_string_equal(err, "f.conf:12: bad");
	/* Truncated, never overrun. */
	util_seterr(err, sizeof(err), "%s", "0123456789abcdefghij");
	assert_string_equal(err, "0123456789abcde");
}

static void
test_seterr_no_buffer(void **state)
{
	char	err[4] = "xyz";

	(void)state;
	util_seterr(NULL, 10, "ignored %d", 1);
	util_seterr(err, 0, "ignored %d", 2);
	assert_string_equal(err, "xyz");
}

static void
test_write_all_through_a_pipe(void **state)
{
	char	*big, *back;
	size_t	 len = 1 << 20, got = 0;
	ssize_t	 n;
	int	 p[2];
	pid_t	 pid;

	(void)state;
	/* More than a pipe holds, so the writes are short and resumed. */
	assert_int_equal(pipe(p), 0);
	big = malloc(len);
	back = malloc(len);
	assert_non_null(big);
	assert_non_null(back);
	for (size_t i = 0; i < len; i++)
		big[i] = (char)(i * 7);
	if ((pid = fork()) == 0) {
		close(p[0]);
		_exit(util_write_all(p[1], big, len) == 0 ? 0 : 1);
	}
	close(p[1]);
	while ((n = read(p[0], back + got, len - got)) > 0)
		got += (size_t)n;
	close(p[0]);
	assert_int_equal(got, len);
	assert_memory_equal(big, back, len);
	free(big);
	free(back);
}

static void
test_write_all_error(void **state)
{
	int	p[2];

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(util_write_all(p[1], "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	close(p[1]);
	assert_int_equal(util_write_all(-1, "x", 1), -1);
	assert_int_equal(errno, EBADF);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seterr_formats),
		cmocka_unit_test(test_seterr_no_buffer),
		cmocka_unit_test(test_write_all_through_a_pipe),
		cmocka_unit_test(test_write_all_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
