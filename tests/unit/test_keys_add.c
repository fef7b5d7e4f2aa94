/*
 * test_keys_add.c: unit tests for lib/content/keys.c (msgspool.conf(5), KEYS
 * FILE): keys_add and keys_disable, and the file they leave.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "content/keys.h"
#include "keysfile.h"
#include "testutil.h"

/* The file at path still reads as before, which is freed. */
static void
assert_unchanged(const char *path, char *before)
{
	char	*after;

	after = tu_read_text(path);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* A test key beside a live one; disabling marks both, flags kept. */
static void
test_add_test_key(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 live[64], test[64], again[64], err[256];
	char		*text;

	tu_write_text(f->keys, "");
	assert_int_equal(keys_add(f->keys, "co", "sms", 0, live, sizeof(live),
	    err, sizeof(err)), 0);
	assert_int_equal(keys_add(f->keys, "co", "*", 1, test, sizeof(test),
	    err, sizeof(err)), 0);
	assert_int_equal(keys_add(f->keys, "co", "*", 1, again, sizeof(again),
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "test key"));
	assert_int_equal(keys_lookup(f->keys, test, strlen(test), &c),
	    KEYS_OK);
	assert_true(c.test);
	assert_int_equal(keys_lookup(f->keys, live, strlen(live), &c),
	    KEYS_OK);
	assert_false(c.test);
	assert_int_equal(keys_disable(f->keys, "co", err, sizeof(err)), 0);
	text = tu_read_text(f->keys);
	assert_non_null(strstr(text, ":test,disabled\n"));
	assert_non_null(strstr(text, ":sms:disabled\n"));
	free(text);
	assert_int_equal(keys_lookup(f->keys, test, strlen(test), &c),
	    KEYS_DISABLED);
}

static int
url_safe(const char *s)
{
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
			return 0;
	return 1;
}

/* Every non-comment, non-blank line is CLIENT:64 hex:SCOPES[:disabled]. */
static void
assert_well_formed(const char *path)
{
	char	*text, *line, *save = NULL, *p, *f[6];
	size_t	 n, i;
	unsigned s;

	text = tu_read_text(path);
	assert_true(text[0] == '\0' || text[strlen(text) - 1] == '\n');
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		p = line + strspn(line, " \t");
		if (*p == '#' || *p == '\0')
			continue;
		n = 0;
		f[n++] = line;
		for (p = line; *p != '\0' && n < 6; p++)
			if (*p == ':') {
				*p = '\0';
				f[n++] = p + 1;
			}
		if (n != 3 && n != 4)
			fail_msg("line with %zu fields", n);
		assert_true(valid_client_id(f[0]));
		assert_int_equal(strlen(f[1]), KEY_HASH_HEX);
		for (i = 0; i < KEY_HASH_HEX; i++)
			assert_non_null(strchr("0123456789abcdef", f[1][i]));
		assert_int_equal(keys_scopes_parse(f[2], &s), 0);
		if (n == 4)
			assert_string_equal(f[3], "disabled");
	}
	free(text);
}

static void
test_add_then_lookup(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 key[128], err[256] = "", line[256], *text;

	tu_key_line(line, sizeof(line), "other", "key-other", "sms", "");
	text = malloc(512);
	assert_non_null(text);
	snprintf(text, 512, "# keep this comment\n%s", line);
	tu_write_text(f->keys, text);
	free(text);

	memset(key, 0, sizeof(key));
	if (keys_add(f->keys, "newco", "sms,ott", 0, key, sizeof(key), err,
	    sizeof(err)) != 0)
		fail_msg("keys_add: %s", err);
	/* keys.h: 44 URL-safe characters (264 bits). */
	assert_int_equal(strlen(key), 44);
	assert_true(url_safe(key));

	assert_key(f, key, "newco", SCOPE_SMS | SCOPE_OTT);

	/* What was there stays. */
	assert_int_equal(lookup(f->keys, "key-other", &c), KEYS_OK);
	assert_string_equal(c.id, "other");
	text = tu_read_text(f->keys);
	assert_non_null(strstr(text, "# keep this comment\n"));
	/* The key itself is never stored. */
	assert_null(strstr(text, key));
	free(text);
	assert_well_formed(f->keys);
}

static void
test_add_file_without_trailing_newline(void **state)
{
	struct fixture	*f = *state;
	char		 key[128], err[256] = "", line[256];

	/* An operator's editor may leave the last line unterminated. */
	tu_key_line(line, sizeof(line), "acme", "key-acme", "sms", "");
	line[strlen(line) - 1] = '\0';
	tu_write_text(f->keys, line);
	if (keys_add(f->keys, "newco", "ott", 0, key, sizeof(key), err,
	    sizeof(err)) != 0)
		fail_msg("keys_add: %s", err);
	/* Both the old line and the new one still work. */
	assert_key(f, "key-acme", "acme", SCOPE_SMS);
	assert_key(f, key, "newco", SCOPE_OTT);
	assert_well_formed(f->keys);
}

static void
test_add_star_scope(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 key[128], err[256] = "";

	tu_write_text(f->keys, "");
	assert_int_equal(keys_add(f->keys, "root", "*", 0, key, sizeof(key),
	    err, sizeof(err)), 0);
	assert_int_equal(lookup(f->keys, key, &c), KEYS_OK);
	assert_int_equal(c.scopes, SCOPE_ALL);
	assert_well_formed(f->keys);
}

static void
test_add_refuses_enabled_duplicate(void **state)
{
	struct fixture	*f = *state;
	char		 key[128], key2[128], err[256] = "", *before;

	tu_write_text(f->keys, "# keys\n");
	assert_int_equal(keys_add(f->keys, "newco", "sms", 0, key, sizeof(key),
	    err, sizeof(err)), 0);
	before = tu_read_text(f->keys);
	err[0] = '\0';
	assert_int_equal(keys_add(f->keys, "newco", "email", 0, key2,
	    sizeof(key2), err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	/* Refused: the file is untouched. */
	assert_unchanged(f->keys, before);
	assert_well_formed(f->keys);
}

static void
test_add_two_clients_distinct_keys(void **state)
{
	struct fixture	*f = *state;
	char		 k1[128], k2[128], err[256] = "";

	tu_write_text(f->keys, "");
	assert_int_equal(keys_add(f->keys, "one", "sms", 0, k1, sizeof(k1), err,
	    sizeof(err)), 0);
	assert_int_equal(keys_add(f->keys, "two", "email", 0, k2, sizeof(k2), err,
	    sizeof(err)), 0);
	assert_string_not_equal(k1, k2);
	assert_key(f, k1, "one", SCOPE_SMS);
	assert_key(f, k2, "two", SCOPE_EMAIL);
	assert_well_formed(f->keys);
}

static void
test_add_bad_arguments(void **state)
{
	struct fixture	*f = *state;
	char		 key[128], err[256], *before;

	tu_write_text(f->keys, "# keys\n");
	before = tu_read_text(f->keys);
	err[0] = '\0';
	assert_int_equal(keys_add(f->keys, "bad id", "sms", 0, key, sizeof(key),
	    err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	err[0] = '\0';
	assert_int_equal(keys_add(f->keys, "a:b", "sms", 0, key, sizeof(key),
	    err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	err[0] = '\0';
	assert_int_equal(keys_add(f->keys, "good", "bogus", 0, key, sizeof(key),
	    err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	assert_unchanged(f->keys, before);
}

static void
test_disable(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 key[128], err[256] = "", line[256];

	tu_key_line(line, sizeof(line), "other", "key-other", "sms", "");
	tu_write_text(f->keys, line);
	assert_int_equal(keys_add(f->keys, "newco", "sms,email", 0, key,
	    sizeof(key), err, sizeof(err)), 0);
	if (keys_disable(f->keys, "newco", err, sizeof(err)) != 0)
		fail_msg("keys_disable: %s", err);
	assert_int_equal(lookup(f->keys, key, &c), KEYS_DISABLED);
	assert_string_equal(c.id, "newco");
	assert_true(c.disabled);
	/* Others untouched. */
	assert_int_equal(lookup(f->keys, "key-other", &c), KEYS_OK);
	assert_well_formed(f->keys);
}

static void
test_disable_every_line_of_client(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 text[1024], line[256], err[256] = "";

	text[0] = '\0';
	tu_key_line(line, sizeof(line), "multi", "key-m1", "sms", "");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "other", "key-other", "sms", "");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "multi", "key-m2", "email", "");
	strcat(text, line);
	tu_write_text(f->keys, text);
	assert_int_equal(keys_disable(f->keys, "multi", err, sizeof(err)), 0);
	assert_int_equal(lookup(f->keys, "key-m1", &c), KEYS_DISABLED);
	assert_int_equal(lookup(f->keys, "key-m2", &c), KEYS_DISABLED);
	assert_int_equal(lookup(f->keys, "key-other", &c), KEYS_OK);
	assert_well_formed(f->keys);
}

static void
test_disable_unknown_client(void **state)
{
	struct fixture	*f = *state;
	char		 line[256], err[256] = "", *before;

	tu_key_line(line, sizeof(line), "other", "key-other", "sms", "");
	tu_write_text(f->keys, line);
	before = tu_read_text(f->keys);
	assert_int_equal(keys_disable(f->keys, "nobody", err, sizeof(err)),
	    -1);
	assert_true(err[0] != '\0');
	assert_unchanged(f->keys, before);
}

static void
test_add_after_disable(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 k1[128], k2[128], err[256] = "";

	tu_write_text(f->keys, "");
	assert_int_equal(keys_add(f->keys, "newco", "sms", 0, k1, sizeof(k1),
	    err, sizeof(err)), 0);
	assert_int_equal(keys_disable(f->keys, "newco", err, sizeof(err)), 0);
	/* No enabled key any more: a new one may be made. */
	if (keys_add(f->keys, "newco", "ott", 0, k2, sizeof(k2), err,
	    sizeof(err)) != 0)
		fail_msg("keys_add after disable: %s", err);
	assert_int_equal(lookup(f->keys, k1, &c), KEYS_DISABLED);
	assert_int_equal(lookup(f->keys, k2, &c), KEYS_OK);
	assert_int_equal(c.scopes, SCOPE_OTT);
	assert_well_formed(f->keys);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, keysfile_setup, \
	    tu_teardown)
	const struct CMUnitTest tests[] = {
		T(test_add_test_key),
		T(test_add_then_lookup),
		T(test_add_file_without_trailing_newline),
		T(test_add_star_scope),
		T(test_add_refuses_enabled_duplicate),
		T(test_add_two_clients_distinct_keys),
		T(test_add_bad_arguments),
		T(test_disable),
		T(test_disable_every_line_of_client),
		T(test_disable_unknown_client),
		T(test_add_after_disable),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
