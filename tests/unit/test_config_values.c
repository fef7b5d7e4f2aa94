/*
 * test_config_values.c: unit tests for lib/base/config.c (msgspool.conf(5)):
 * the values a config gives (paths, sizes, seconds, limits) and the
 * default path of the config; its secrets are test_config_secret.c's.
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
#include <unistd.h>

#include "base/config.h"
#include "base/msgspool.h"
#include "conftext.h"
#include "testutil.h"

#define KIB		((size_t)1024)
#define MIB		(KIB * 1024)
#define GIB		(MIB * 1024)

static void
test_path_relative_and_absolute(void **state)
{
	struct config	*c;
	char		*p;

	(void)state;
	c = parse_ok("spool = spool\n"
	    "keys = /abs/keys\n"
	    "templates = sub/templates\n"
	    "[email]\n"
	    "dir = outbox\n");
	p = config_path(c, NULL, "spool", NULL);
	assert_string_equal(p, "/etc/msgspool/spool");
	free(p);
	p = config_path(c, NULL, "keys", NULL);
	assert_string_equal(p, "/abs/keys");
	free(p);
	p = config_path(c, NULL, "templates", NULL);
	assert_string_equal(p, "/etc/msgspool/sub/templates");
	free(p);
	p = config_path(c, "email", "dir", NULL);
	assert_string_equal(p, "/etc/msgspool/outbox");
	free(p);
	config_free(c);
}

static void
test_path_default(void **state)
{
	struct config	*c;
	char		*p;

	(void)state;
	c = parse_ok("spool = /s\n");
	/* Absent: def, resolved the same way. */
	p = config_path(c, NULL, "keys", "keys");
	assert_string_equal(p, "/etc/msgspool/keys");
	free(p);
	p = config_path(c, NULL, "keys", "/var/lib/keys");
	assert_string_equal(p, "/var/lib/keys");
	free(p);
	assert_null(config_path(c, NULL, "keys", NULL));
	/* Present wins over def. */
	p = config_path(c, NULL, "spool", "other");
	assert_string_equal(p, "/s");
	free(p);
	config_free(c);
}

static void
test_path_relative_to_loaded_file(void **state)
{
	const char	*dir = *state;
	char		 path[512], want[600], err[256] = "";
	struct config	*c;
	char		*p;

	write_file(dir, "msgspool.conf", "spool = myspool\n", path,
	    sizeof(path));
	c = config_load(path, err, sizeof(err));
	if (c == NULL)
		fail_msg("config_load: %s", err);
	p = config_path(c, NULL, "spool", NULL);
	snprintf(want, sizeof(want), "%s/myspool", dir);
	assert_string_equal(p, want);
	free(p);
	config_free(c);
}

static void
test_size_values(void **state)
{
	struct config	*c;
	size_t		 v;

	(void)state;
	c = parse_ok("plain = 10\n"
	    "kib = 10K\n"
	    "mib = 2M\n"
	    "gib = 1G\n"
	    "zero = 0\n");
	v = 1;
	assert_int_equal(config_size(c, NULL, "plain", 7, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(config_size(c, NULL, "kib", 7, &v), 0);
	assert_int_equal(v, 10 * KIB);
	assert_int_equal(config_size(c, NULL, "mib", 7, &v), 0);
	assert_int_equal(v, 2 * MIB);
	assert_int_equal(config_size(c, NULL, "gib", 7, &v), 0);
	assert_int_equal(v, GIB);
	assert_int_equal(config_size(c, NULL, "zero", 7, &v), 0);
	assert_int_equal(v, 0);
	/* Absent: the default. */
	assert_int_equal(config_size(c, NULL, "absent", 12345, &v), 0);
	assert_int_equal(v, 12345);
	config_free(c);
}

static void
test_size_bad_values(void **state)
{
	static const char *const bad[] = {
		"abc", "10X", "-1", "K", "1.5M", "10 K x", "10KK",
		"99999999999999999999999", "18446744073709551615G",
	};
	struct config	*c;
	char		 text[128];
	size_t		 i, v;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "max = %s\n", bad[i]);
		c = parse_ok(text);
		if (config_size(c, NULL, "max", 1, &v) != -1)
			fail_msg("config_size accepted \"%s\" (as %zu)",
			    bad[i], v);
		config_free(c);
	}
}

static void
test_seconds_values(void **state)
{
	struct config	*c;
	long		 v;

	(void)state;
	c = parse_ok("a = 30\nb = 30s\nc = 5m\nd = 2h\ne = 1d\nf = 0\n");
	assert_int_equal(config_seconds(c, NULL, "a", 9, &v), 0);
	assert_int_equal(v, 30);
	assert_int_equal(config_seconds(c, NULL, "b", 9, &v), 0);
	assert_int_equal(v, 30);
	assert_int_equal(config_seconds(c, NULL, "c", 9, &v), 0);
	assert_int_equal(v, 300);
	assert_int_equal(config_seconds(c, NULL, "d", 9, &v), 0);
	assert_int_equal(v, 7200);
	assert_int_equal(config_seconds(c, NULL, "e", 9, &v), 0);
	assert_int_equal(v, 86400);
	assert_int_equal(config_seconds(c, NULL, "f", 9, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(config_seconds(c, NULL, "absent", 86400, &v), 0);
	assert_int_equal(v, 86400);
	config_free(c);
}

static void
test_seconds_bad_values(void **state)
{
	static const char *const bad[] = {
		"abc", "5x", "-5", "h", "1.5h", "5 m x", "5mm",
		"99999999999999999999999d",
	};
	struct config	*c;
	char		 text[128];
	size_t		 i;
	long		 v;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "t = %s\n", bad[i]);
		c = parse_ok(text);
		if (config_seconds(c, NULL, "t", 1, &v) != -1)
			fail_msg("config_seconds accepted \"%s\" (as %ld)",
			    bad[i], v);
		config_free(c);
	}
}

static void
test_limits_defaults(void **state)
{
	struct config	*c;
	struct limits	 l;
	char		 err[256] = "";

	(void)state;
	memset(&l, 0xa5, sizeof(l));
	c = parse_ok("spool = /s\n");
	assert_int_equal(config_limits(c, &l, err, sizeof(err)), 0);
	assert_int_equal(l.body, 1 * MIB);
	assert_int_equal(l.body_email, 32 * MIB);
	assert_int_equal(l.batch, 1000);
	assert_int_equal(l.attachment, 10 * MIB);
	assert_int_equal(l.attachments, 25 * MIB);
	config_free(c);
}

static void
test_limits_overrides(void **state)
{
	struct config	*c;
	struct limits	 l;
	char		 err[256] = "";

	(void)state;
	c = parse_ok("max-body = 2M\n"
	    "max-email-body = 64M\n"
	    "max-batch = 50\n"
	    "max-attachment = 512K\n"
	    "max-message-attachments = 1G\n");
	assert_int_equal(config_limits(c, &l, err, sizeof(err)), 0);
	assert_int_equal(l.body, 2 * MIB);
	assert_int_equal(l.body_email, 64 * MIB);
	assert_int_equal(l.batch, 50);
	assert_int_equal(l.attachment, 512 * KIB);
	assert_int_equal(l.attachments, GIB);
	config_free(c);
}

static void
test_limits_partial_override(void **state)
{
	struct config	*c;
	struct limits	 l;
	char		 err[256] = "";

	(void)state;
	c = parse_ok("max-batch = 7\n");
	assert_int_equal(config_limits(c, &l, err, sizeof(err)), 0);
	assert_int_equal(l.batch, 7);
	assert_int_equal(l.body, 1 * MIB);
	assert_int_equal(l.body_email, 32 * MIB);
	assert_int_equal(l.attachment, 10 * MIB);
	assert_int_equal(l.attachments, 25 * MIB);
	config_free(c);
}

static void
test_limits_top_level_only(void **state)
{
	struct config	*c;
	struct limits	 l;
	char		 err[256] = "";

	(void)state;
	/* The limits are top-level keys; one inside a section is not. */
	c = parse_ok("[sms]\nmax-body = 5\nmax-batch = 3\n");
	assert_int_equal(config_limits(c, &l, err, sizeof(err)), 0);
	assert_int_equal(l.body, 1 * MIB);
	assert_int_equal(l.batch, 1000);
	config_free(c);
}

static void
test_limits_bad_value(void **state)
{
	struct config	*c;
	struct limits	 l;
	char		 err[256] = "";

	(void)state;
	c = parse_ok("max-body = lots\n");
	assert_int_equal(config_limits(c, &l, err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	config_free(c);
}

static void
test_default_path_env(void **state)
{
	char *const	 env[] = {
		"PATH=/usr/bin",
		"MSGSPOOL_CONFIGX=/wrong.conf",
		"MSGSPOOL_CONFIG=/srv/test/msgspool.conf",
		"HOME=/root",
		NULL
	};

	(void)state;
	assert_string_equal(config_default_path(env),
	    "/srv/test/msgspool.conf");
}

static void
test_default_path_compiled_in(void **state)
{
	char *const	 env[] = {
		"PATH=/usr/bin",
		"MSGSPOOL_CONFIGX=/wrong.conf",
		"XMSGSPOOL_CONFIG=/wrong2.conf",
		NULL
	};
	char *const	 empty[] = { NULL };

	(void)state;
	assert_string_equal(config_default_path(env),
	    MSGSPOOL_DEFAULT_CONFIG);
	assert_string_equal(config_default_path(empty),
	    MSGSPOOL_DEFAULT_CONFIG);
	assert_non_null(strstr(MSGSPOOL_DEFAULT_CONFIG,
	    "/msgspool/msgspool.conf"));
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup_tmp, tu_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_relative_and_absolute),
		cmocka_unit_test(test_path_default),
		T(test_path_relative_to_loaded_file),
		cmocka_unit_test(test_size_values),
		cmocka_unit_test(test_size_bad_values),
		cmocka_unit_test(test_seconds_values),
		cmocka_unit_test(test_seconds_bad_values),
		cmocka_unit_test(test_limits_defaults),
		cmocka_unit_test(test_limits_overrides),
		cmocka_unit_test(test_limits_partial_override),
		cmocka_unit_test(test_limits_top_level_only),
		cmocka_unit_test(test_limits_bad_value),
		cmocka_unit_test(test_default_path_env),
		cmocka_unit_test(test_default_path_compiled_in),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
