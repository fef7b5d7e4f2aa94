/*
 * test_rfc3339.c: times written and read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rfc3339.h"

static time_t
parse_ok(const char *s)
{
	time_t	t = (time_t)-12345;

	if (rfc3339_parse(s, &t) != 0)
		fail_msg("rfc3339_parse rejected %s", s);
	return t;
}

static void
test_time_parse(void **state)
{
	time_t	t;

	(void)state;
	assert_int_equal(parse_ok("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(parse_ok("2000-01-01T00:00:00Z"), 946684800);
	assert_int_equal(parse_ok("2026-11-23T10:00:00Z"), 1795428000);
	assert_int_equal(parse_ok("2024-02-29T12:34:56Z"), 1709210096);
	/* Fractions do not move the second. */
	assert_int_equal(parse_ok("2026-11-23T10:00:00.999Z"), 1795428000);
	assert_int_equal(parse_ok("2026-11-23T10:00:00.001Z"), 1795428000);
	/* Offsets: local time minus offset is UTC. */
	assert_int_equal(parse_ok("2026-11-23T11:00:00+01:00"), 1795428000);
	assert_int_equal(parse_ok("2026-11-23T04:30:00-05:30"), 1795428000);
	assert_int_equal(parse_ok("2026-11-23T10:00:00+00:00"), 1795428000);
	assert_int_equal(parse_ok("2026-11-23T10:00:00-00:00"), 1795428000);
	/* Across a day boundary. */
	assert_int_equal(parse_ok("2026-11-24T01:00:00+15:00"), 1795428000);

	t = 777;
	assert_int_equal(rfc3339_parse("2026-13-01T00:00:00Z", &t), -1);
	assert_int_equal(rfc3339_parse("2026-11-23T10:00:00", &t), -1);
	assert_int_equal(rfc3339_parse("2026-11-23 junk", &t), -1);
	assert_int_equal(rfc3339_parse("", &t), -1);
	assert_int_equal(rfc3339_parse("2026-02-30T00:00:00Z", &t), -1);
}

static void
test_time_format(void **state)
{
	char	buf[32];

	(void)state;
	rfc3339_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	rfc3339_format((time_t)1700000000, buf, sizeof(buf));
	assert_string_equal(buf, "2023-11-14T22:13:20Z");
	rfc3339_format((time_t)1709210096, buf, sizeof(buf));
	assert_string_equal(buf, "2024-02-29T12:34:56Z");
	/* buf[21] is enough. */
	memset(buf, 'x', sizeof(buf));
	rfc3339_format((time_t)1795428000, buf, 21);
	assert_string_equal(buf, "2026-11-23T10:00:00Z");
}

static void
test_round_trip(void **state)
{
	char	buf[RFC3339_LEN];
	time_t	t, back;

	(void)state;
	for (t = 0; t < (time_t)4102444800; t += (time_t)86399 * 97) {
		rfc3339_format(t, buf, sizeof(buf));
		assert_int_equal(rfc3339_parse(buf, &back), 0);
		assert_true(back == t);
	}
}

/* The calendar counted by hand agrees with the C library's, 1900-2200. */
static void
test_agrees_with_libc(void **state)
{
	char		 ours[32], theirs[64];
	struct tm	 tm;
	time_t		 t, back;

	(void)state;
	for (t = -2208988800LL; t < 7258118400LL; t += 86400 * 7 + 3661) {
		rfc3339_format(t, ours, sizeof(ours));
		assert_non_null(gmtime_r(&t, &tm));
		snprintf(theirs, sizeof(theirs), "%04d-%02d-%02dT%02d:%02d:%02dZ",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
		assert_string_equal(ours, theirs);
		assert_int_equal(rfc3339_parse(ours, &back), 0);
		assert_int_equal(back, t);
	}
	/* The last second of a leap year's February, and of a century's. */
	assert_int_equal(rfc3339_parse("2024-02-29T23:59:59Z", &back), 0);
	rfc3339_format(back, ours, sizeof(ours));
	assert_string_equal(ours, "2024-02-29T23:59:59Z");
	assert_int_equal(rfc3339_parse("2000-02-29T00:00:00+01:00", &back), 0);
	rfc3339_format(back, ours, sizeof(ours));
	assert_string_equal(ours, "2000-02-28T23:00:00Z");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agrees_with_libc),
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_time_format),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
