/*
 * test_config.c: unit tests for lib/base/config.c (msgspool.conf(5)): parsing
 * (keys, sections, comments, errors) and loading a file.  The values it
 * gives (paths, secrets, sizes, seconds, limits) and the default path:
 * test_config_values.c.
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

static void
test_top_level_keys(void **state)
{
	struct config	*c;

	(void)state;
	c = parse_ok("spool = /var/spool/msgspool\n"
	    "keys = /etc/msgspool/keys\n"
	    "templates=/srv/templates\n");
	assert_string_equal(config_get(c, NULL, "spool"),
	    "/var/spool/msgspool");
	assert_string_equal(config_get(c, "", "spool"),
	    "/var/spool/msgspool");
	assert_string_equal(config_get(c, NULL, "keys"),
	    "/etc/msgspool/keys");
	assert_string_equal(config_get(c, NULL, "templates"),
	    "/srv/templates");
	assert_null(config_get(c, NULL, "absent"));
	assert_string_equal(config_file(c), CONF_PATH);
	config_free(c);
}

static void
test_inline_comments(void **state)
{
	struct config	*c;

	(void)state;
	c = parse_ok("concurrency = 16   # transfers at once\n"
	    "url = https://h.example/x#frag\n"
	    "header = X-Tag: a#b\n"
	    "starttls = yes\t# yes, no, try\n");
	assert_string_equal(config_get(c, NULL, "concurrency"), "16");
	/* A '#' inside a value is kept: only one after blank space starts
	 * a comment. */
	assert_string_equal(config_get(c, NULL, "url"),
	    "https://h.example/x#frag");
	assert_string_equal(config_get(c, NULL, "header"), "X-Tag: a#b");
	assert_string_equal(config_get(c, NULL, "starttls"), "yes");
	config_free(c);
}

static void
test_sections(void **state)
{
	struct config	*c;

	(void)state;
	c = parse_ok("spool = /s\n"
	    "[sms]\n"
	    "provider = twilio\n"
	    "from = +15550001\n"
	    "[ott.1]\n"
	    "provider = whatsapp\n"
	    "[email]\n");
	assert_string_equal(config_get(c, "sms", "provider"), "twilio");
	assert_string_equal(config_get(c, "sms", "from"), "+15550001");
	assert_string_equal(config_get(c, "ott.1", "provider"), "whatsapp");
	/* Keys stay in their own section. */
	assert_null(config_get(c, NULL, "provider"));
	assert_null(config_get(c, "ott.1", "from"));
	assert_null(config_get(c, "sms", "spool"));
	assert_null(config_get(c, "voice", "provider"));
	assert_true(config_has_section(c, "sms"));
	assert_true(config_has_section(c, "ott.1"));
	/* A header with no keys under it still appeared. */
	assert_true(config_has_section(c, "email"));
	assert_false(config_has_section(c, "voice"));
	assert_false(config_has_section(c, "ott.2"));
	config_free(c);
}

static void
test_comments_and_blank_lines(void **state)
{
	struct config	*c;

	(void)state;
	c = parse_ok("# a comment\n"
	    "\n"
	    "   # an indented comment\n"
	    "\t\n"
	    "spool = /s\n"
	    "#spool = /commented-out\n"
	    "[sms]\n"
	    "# provider = nope\n"
	    "provider = file\n");
	assert_string_equal(config_get(c, NULL, "spool"), "/s");
	assert_string_equal(config_get(c, "sms", "provider"), "file");
	assert_null(config_get(c, NULL, "#spool"));
	assert_null(config_get(c, "sms", "# provider"));
	config_free(c);
}

static void
test_repeated_keys(void **state)
{
	struct config	*c;

	(void)state;
	c = parse_ok("[sms]\n"
	    "provider = http\n"
	    "header = X-One: 1\n"
	    "header = X-Two: 2\n"
	    "header = X-Three: 3\n");
	assert_string_equal(config_get(c, "sms", "header"), "X-Three: 3");
	assert_string_equal(config_get_n(c, "sms", "header", 0), "X-One: 1");
	assert_string_equal(config_get_n(c, "sms", "header", 1), "X-Two: 2");
	assert_string_equal(config_get_n(c, "sms", "header", 2),
	    "X-Three: 3");
	assert_null(config_get_n(c, "sms", "header", 3));
	assert_string_equal(config_get_n(c, "sms", "provider", 0), "http");
	assert_null(config_get_n(c, "sms", "provider", 1));
	assert_null(config_get_n(c, "sms", "absent", 0));
	config_free(c);
}

static void
test_whitespace_trimmed(void **state)
{
	struct config	*c;

	(void)state;
	c = parse_ok("   spool   =   /var/spool/x   \n"
	    "\tkeys\t=\t/etc/keys\t\n"
	    "[sms]\n"
	    "  from  =  value with  inner spaces \t \n"
	    "url = http://h/p?a=b&c=d\n");
	assert_string_equal(config_get(c, NULL, "spool"), "/var/spool/x");
	assert_string_equal(config_get(c, NULL, "keys"), "/etc/keys");
	assert_string_equal(config_get(c, "sms", "from"),
	    "value with  inner spaces");
	/* Only the first '=' splits. */
	assert_string_equal(config_get(c, "sms", "url"), "http://h/p?a=b&c=d");
	config_free(c);
}

static void
test_last_line_without_newline(void **state)
{
	struct config	*c;

	(void)state;
	c = parse_ok("spool = /a\nkeys = /b");
	assert_string_equal(config_get(c, NULL, "keys"), "/b");
	config_free(c);
}

static void
test_error_missing_equals(void **state)
{
	struct config	*c;
	const char	*text = "spool = /s\n# fine\nthis line has no equals\n";
	char		 err[256] = "";

	(void)state;
	c = config_parse(CONF_PATH, text, strlen(text), err, sizeof(err));
	assert_null(c);
	/* "msgspool.conf:3: missing '='": file, line number. */
	assert_non_null(strstr(err, "msgspool.conf"));
	assert_non_null(strstr(err, ":3:"));
	assert_null(strchr(err, '\n'));
}

static void
test_error_bad_section(void **state)
{
	struct config	*c;
	const char	*text = "spool = /s\n[sms\nprovider = file\n";
	char		 err[256] = "";

	(void)state;
	c = config_parse(CONF_PATH, text, strlen(text), err, sizeof(err));
	assert_null(c);
	assert_non_null(strstr(err, ":2:"));
}

static void
test_error_empty_section(void **state)
{
	struct config	*c;
	const char	*text = "\n\n\n[]\n";
	char		 err[256] = "";

	(void)state;
	c = config_parse(CONF_PATH, text, strlen(text), err, sizeof(err));
	assert_null(c);
	assert_non_null(strstr(err, ":4:"));
}

static void
test_load_file(void **state)
{
	const char	*dir = *state;
	char		 path[512], err[256] = "";
	struct config	*c;

	write_file(dir, "msgspool.conf", "spool = /s\n[sms]\nprovider = file\n",
	    path, sizeof(path));
	c = config_load(path, err, sizeof(err));
	if (c == NULL)
		fail_msg("config_load: %s", err);
	assert_string_equal(config_get(c, NULL, "spool"), "/s");
	assert_string_equal(config_get(c, "sms", "provider"), "file");
	assert_string_equal(config_file(c), path);
	config_free(c);
}

static void
test_load_missing_file(void **state)
{
	const char	*dir = *state;
	char		 path[512], err[256] = "";

	snprintf(path, sizeof(path), "%s/does-not-exist.conf", dir);
	assert_null(config_load(path, err, sizeof(err)));
	assert_true(err[0] != '\0');
}

/* A FIFO named as the config is refused at once, never read. */
static void
test_load_fifo(void **state)
{
	const char	*dir = *state;
	char		 path[512], err[256] = "";

	snprintf(path, sizeof(path), "%s/fifo.conf", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(5);
	assert_null(config_load(path, err, sizeof(err)));
	alarm(0);
	assert_non_null(strstr(err, "not a regular file"));
}

static void
test_load_error_line_number(void **state)
{
	const char	*dir = *state;
	char		 path[512], err[256] = "";

	write_file(dir, "msgspool.conf", "a = 1\nb = 2\n\n\nbroken\n", path,
	    sizeof(path));
	assert_null(config_load(path, err, sizeof(err)));
	assert_non_null(strstr(err, ":5:"));
}

static void
test_free_null(void **state)
{
	(void)state;
	config_free(NULL);
	assert_true(1);	/* reached: config_free(NULL) is a no-op */
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup_tmp, tu_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_level_keys),
		cmocka_unit_test(test_inline_comments),
		cmocka_unit_test(test_sections),
		cmocka_unit_test(test_comments_and_blank_lines),
		cmocka_unit_test(test_repeated_keys),
		cmocka_unit_test(test_whitespace_trimmed),
		cmocka_unit_test(test_last_line_without_newline),
		cmocka_unit_test(test_error_missing_equals),
		cmocka_unit_test(test_error_bad_section),
		cmocka_unit_test(test_error_empty_section),
		T(test_load_file),
		T(test_load_missing_file),
		T(test_load_fifo),
		T(test_load_error_line_number),
		cmocka_unit_test(test_free_null),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
