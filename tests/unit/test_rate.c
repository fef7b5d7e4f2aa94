/*
 * test_rate.c: rate limits: parsing, fixed windows, a request refused
 * whole, the headers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "http/rate.h"
#include "spool/spool.h"
#include "testutil.h"

static void
test_parse(void **state)
{
	struct rate	r;

	(void)state;
	assert_int_equal(rate_parse("5/s", &r), 0);
	assert_int_equal(r.limit, 5);
	assert_int_equal(r.window, 1);
	assert_int_equal(rate_parse("100/min", &r), 0);
	assert_int_equal(r.window, 60);
	assert_int_equal(rate_parse("7/h", &r), 0);
	assert_int_equal(r.window, 3600);
	assert_int_equal(rate_parse("0/s", &r), -1);
	assert_int_equal(rate_parse("-1/s", &r), -1);
	assert_int_equal(rate_parse("5/day", &r), -1);
	assert_int_equal(rate_parse("5", &r), -1);
	assert_int_equal(rate_parse("5 /s", &r), -1);
	assert_int_equal(rate_parse("", &r), -1);
	assert_int_equal(rate_parse(NULL, &r), -1);
}

static void
test_windows(void **state)
{
	struct tu_spool	*f = *state;
	struct rate	 r;
	time_t		 t = 1795428000;	/* a minute's start */
	char		 p[64], s[64];

	assert_int_equal(rate_parse("5/min", &r), 0);
	assert_int_equal(rate_take(f->sp, "acme", &r, 3, t + 10), 1);
	assert_int_equal(r.remaining, 2);
	assert_int_equal(r.reset, 50);
	/* Larger than what remains: refused whole, nothing counted. */
	assert_int_equal(rate_take(f->sp, "acme", &r, 3, t + 11), 0);
	assert_int_equal(r.remaining, 2);
	assert_int_equal(rate_take(f->sp, "acme", &r, 2, t + 12), 1);
	assert_int_equal(r.remaining, 0);
	assert_int_equal(rate_take(f->sp, "acme", &r, 1, t + 59), 0);
	rate_headers(&r, p, sizeof(p), s, sizeof(s));
	assert_string_equal(p, "\"msgs\";q=5;w=60");
	assert_string_equal(s, "\"msgs\";r=0;t=1");
	/* Another client counts alone; the next window starts afresh. */
	assert_int_equal(rate_take(f->sp, "other", &r, 5, t + 59), 1);
	assert_int_equal(rate_take(f->sp, "acme", &r, 5, t + 60), 1);
	assert_int_equal(r.remaining, 0);
	assert_int_equal(r.reset, 60);
	/* A name that is no client id is never a path. */
	assert_int_equal(rate_take(f->sp, "../x", &r, 1, t), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test_setup_teardown(test_windows, tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
