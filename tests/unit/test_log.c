/*
 * test_log.c: unit tests for lib/base/log.c.
 *
 * log_msg writes to stderr, so each test points fd 2 at a temporary
 * file with dup2, logs, puts fd 2 back, and only then asserts (a failed
 * assertion must not leave stderr redirected).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "testutil.h"

struct capture {
	char	 dir[TU_DIR_SIZE];	/* first: see testutil.h */
	char	 path[128];
	int	 fd;
	int	 saved;
};

static int
setup(void **state)
{
	struct capture	*c;

	if ((c = tu_fixture_new(sizeof(*c), "log")) == NULL)
		return -1;
	snprintf(c->path, sizeof(c->path), "%s/stderr", c->dir);
	c->fd = -1;
	c->saved = -1;
	*state = c;
	return 0;
}

/* Point fd 2 at a fresh, empty capture file. */
static void
capture_begin(struct capture *c)
{
	c->fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(c->fd >= 0);
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	assert_true(c->saved >= 0);
	assert_true(dup2(c->fd, STDERR_FILENO) == STDERR_FILENO);
}

/* Put fd 2 back; return what was written (malloc'd, NUL-terminated). */
static char *
capture_end(struct capture *c, size_t *lenp)
{
	struct stat	 st;
	char		*buf;
	ssize_t		 n;
	size_t		 got = 0;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	c->saved = -1;

	assert_int_equal(fstat(c->fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	while (got < (size_t)st.st_size) {
		n = pread(c->fd, buf + got, (size_t)st.st_size - got,
		    (off_t)got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(c->fd);
	c->fd = -1;
	if (lenp != NULL)
		*lenp = got;
	return buf;
}

static size_t
count_char(const char *s, size_t len, char ch)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++)
		if (s[i] == ch)
			n++;
	return n;
}

static void
test_one_line(void **state)
{
	struct capture	*c = *state;
	char		*out;
	size_t		 len;

	capture_begin(c);
	log_msg(LOG_LEVEL_INFO, "hello world");
	out = capture_end(c, &len);

	assert_true(len > 0);
	assert_int_equal(count_char(out, len, '\n'), 1);
	assert_int_equal(out[len - 1], '\n');
	assert_non_null(strstr(out, "hello world"));
	free(out);
}

static void
test_newline_replaced(void **state)
{
	struct capture	*c = *state;
	char		*out;
	size_t		 len;

	capture_begin(c);
	log_msg(LOG_LEVEL_WARN, "first\nsecond\nthird");
	out = capture_end(c, &len);

	assert_int_equal(count_char(out, len, '\n'), 1);
	assert_int_equal(out[len - 1], '\n');
	/* The header says newlines become spaces. */
	assert_non_null(strstr(out, "first second third"));
	free(out);
}

static void
test_trailing_newline_in_message(void **state)
{
	struct capture	*c = *state;
	char		*out;
	size_t		 len;

	capture_begin(c);
	log_msg(LOG_LEVEL_ERR, "ends with newline\n");
	out = capture_end(c, &len);

	assert_int_equal(count_char(out, len, '\n'), 1);
	assert_int_equal(out[len - 1], '\n');
	assert_non_null(strstr(out, "ends with newline"));
	free(out);
}

static void
test_format_arguments(void **state)
{
	struct capture	*c = *state;
	char		*out;
	size_t		 len;

	capture_begin(c);
	log_warn("n=%d s=%s", 42, "x\ny");
	out = capture_end(c, &len);

	assert_int_equal(count_char(out, len, '\n'), 1);
	assert_non_null(strstr(out, "n=42 s=x y"));
	free(out);
}

static void
test_prefix_pid_name_year(void **state)
{
	struct capture	*c = *state;
	char		*out;
	char		 pid[32], y0[16], y1[16];
	size_t		 len;
	time_t		 before, after;
	struct tm	 tm;

	before = time(NULL);
	capture_begin(c);
	log_info("prefixed");
	out = capture_end(c, &len);
	after = time(NULL);

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	gmtime_r(&before, &tm);
	snprintf(y0, sizeof(y0), "%04d", tm.tm_year + 1900);
	gmtime_r(&after, &tm);
	snprintf(y1, sizeof(y1), "%04d", tm.tm_year + 1900);

	assert_int_equal(count_char(out, len, '\n'), 1);
	/* Prefix: a UTC time, the program name and its pid. */
	assert_non_null(strstr(out, pid));
	assert_non_null(strstr(out, "test_log"));
	assert_true(strstr(out, y0) != NULL || strstr(out, y1) != NULL);
	/* The message comes after the prefix. */
	assert_true(strstr(out, "prefixed") > strstr(out, pid));
	free(out);
}

static void
test_three_calls_three_lines(void **state)
{
	struct capture	*c = *state;
	char		*out, *l2, *l3;
	size_t		 len;

	capture_begin(c);
	log_info("alpha");
	log_warn("beta");
	log_err("gamma");
	out = capture_end(c, &len);

	assert_int_equal(count_char(out, len, '\n'), 3);
	assert_int_equal(out[len - 1], '\n');
	l2 = strchr(out, '\n') + 1;
	l3 = strchr(l2, '\n') + 1;
	assert_non_null(strstr(out, "alpha"));
	assert_true(strstr(out, "alpha") < l2);
	assert_true(strstr(l2, "beta") != NULL && strstr(l2, "beta") < l3);
	assert_non_null(strstr(l3, "gamma"));
	free(out);
}

static void
test_long_message_one_line(void **state)
{
	struct capture	*c = *state;
	char		*out, *big;
	size_t		 len, i;

	big = malloc(20001);
	assert_non_null(big);
	for (i = 0; i < 20000; i++)
		big[i] = (i % 100 == 99) ? '\n' : 'a';
	big[20000] = '\0';

	capture_begin(c);
	log_msg(LOG_LEVEL_INFO, "%s", big);
	out = capture_end(c, &len);

	assert_true(len > 0);
	assert_int_equal(count_char(out, len, '\n'), 1);
	assert_int_equal(out[len - 1], '\n');
	assert_non_null(strstr(out, "aaaaaaaaaa"));
	free(out);
	free(big);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup, tu_teardown)
	const struct CMUnitTest tests[] = {
		T(test_one_line),
		T(test_newline_replaced),
		T(test_trailing_newline_in_message),
		T(test_format_arguments),
		T(test_prefix_pid_name_year),
		T(test_three_calls_three_lines),
		T(test_long_message_one_line),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
