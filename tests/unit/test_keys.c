/*
 * test_keys.c: unit tests for lib/content/keys.c (msgspool.conf(5), KEYS FILE):
 * the hash, keys_lookup and keys_lookup_text, scopes and client names.
 * keys_add and keys_disable: test_keys_add.c.
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

static void
test_hash_known_vectors(void **state)
{
	char	hex[KEY_HASH_HEX + 1];

	(void)state;
	keys_hash_hex("abc", 3, hex);
	assert_string_equal(hex,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	keys_hash_hex("", 0, hex);
	assert_string_equal(hex,
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* Only len bytes count. */
	keys_hash_hex("abcdef", 3, hex);
	assert_string_equal(hex,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(strlen(hex), KEY_HASH_HEX);
}

/* A keys file with good, disabled, commented and malformed lines. */
static void
write_sample(const struct fixture *f)
{
	char	text[4096], line[256], h[KEY_HASH_HEX + 1];

	text[0] = '\0';
	strcat(text, "# msgspool keys\n\n   # indented comment\n");
	tu_key_line(line, sizeof(line), "acme", "key-acme", "sms,ott", "");
	strcat(text, line);
	strcat(text, "this line is garbage\n");
	/* Malformed lines whose hash would match: must be skipped. */
	tu_key_line(line, sizeof(line), ".hidden", "key-badid", "sms", "");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "bad id", "key-space", "sms", "");
	strcat(text, line);
	keys_hash_hex("key-noscope", strlen("key-noscope"), h);
	snprintf(line, sizeof(line), "noscope:%s\n", h);
	strcat(text, line);
	strcat(text, "shorthash:abcdef:sms\n");
	/* A commented-out key does not count. */
	tu_key_line(line, sizeof(line), "# ghost", "key-ghost", "sms", "");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "old", "key-old", "email", ":disabled");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "all", "key-all", "*", "");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "voicy", "key-voice", "email,voice",
	    "");
	strcat(text, line);
	tu_write_text(f->keys, text);
}

static void
test_lookup_ok(void **state)
{
	struct fixture	*f = *state;

	write_sample(f);
	assert_key(f, "key-acme", "acme", SCOPE_SMS | SCOPE_OTT);
	assert_key(f, "key-all", "all", SCOPE_ALL);
	/* After the malformed lines, parsing goes on. */
	assert_key(f, "key-voice", "voicy", SCOPE_EMAIL | SCOPE_VOICE);
}

/* keys_lookup_text: the same answers from the file's text in memory. */
static void
test_lookup_text(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		*text;
	size_t		 len;
	const char	*k;

	write_sample(f);
	assert_non_null(text = tu_read_text(f->keys));
	len = strlen(text);
	k = "key-acme";
	memset(&c, 0, sizeof(c));
	assert_int_equal(keys_lookup_text(f->keys, text, len, k, strlen(k),
	    &c), KEYS_OK);
	assert_string_equal(c.id, "acme");
	assert_int_equal(c.scopes, SCOPE_SMS | SCOPE_OTT);
	k = "key-voice";
	assert_int_equal(keys_lookup_text(f->keys, text, len, k, strlen(k),
	    &c), KEYS_OK);
	assert_string_equal(c.id, "voicy");
	k = "key-old";
	assert_int_equal(keys_lookup_text(f->keys, text, len, k, strlen(k),
	    &c), KEYS_DISABLED);
	assert_string_equal(c.id, "old");
	k = "key-ghost";
	assert_int_equal(keys_lookup_text(f->keys, text, len, k, strlen(k),
	    &c), KEYS_UNKNOWN);
	assert_int_equal(keys_lookup_text(f->keys, text, len, "", 0, &c),
	    KEYS_UNKNOWN);
	/* Only len bytes of the text count: the last line cut off. */
	k = "key-voice";
	assert_int_equal(keys_lookup_text(f->keys, text, len - 10, k,
	    strlen(k), &c), KEYS_UNKNOWN);
	/* An empty file holds no key. */
	assert_int_equal(keys_lookup_text(f->keys, "", 0, k, strlen(k), &c),
	    KEYS_UNKNOWN);
	free(text);
}

static void
test_lookup_uses_len(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;

	write_sample(f);
	/* Only the first len bytes are the key. */
	assert_int_equal(keys_lookup(f->keys, "key-acmeXYZ", 8, &c), KEYS_OK);
	assert_string_equal(c.id, "acme");
	assert_int_equal(keys_lookup(f->keys, "key-acme", 7, &c),
	    KEYS_UNKNOWN);
}

static void
test_lookup_unknown(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;

	write_sample(f);
	assert_int_equal(lookup(f->keys, "no-such-key", &c), KEYS_UNKNOWN);
	assert_int_equal(lookup(f->keys, "KEY-ACME", &c), KEYS_UNKNOWN);
	/* The hash itself is not the key. */
	{
		char	hex[KEY_HASH_HEX + 1];

		keys_hash_hex("key-acme", 8, hex);
		assert_int_equal(lookup(f->keys, hex, &c), KEYS_UNKNOWN);
	}
}

static void
test_lookup_disabled(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;

	write_sample(f);
	assert_int_equal(lookup(f->keys, "key-old", &c), KEYS_DISABLED);
	assert_string_equal(c.id, "old");
	assert_int_equal(c.scopes, SCOPE_EMAIL);
	assert_true(c.disabled);
}

static void
test_lookup_empty_key(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 text[256];

	/* Even with a line for the empty key, "" is unknown. */
	tu_key_line(text, sizeof(text), "empty", "", "sms", "");
	tu_write_text(f->keys, text);
	assert_int_equal(keys_lookup(f->keys, "", 0, &c), KEYS_UNKNOWN);
	assert_int_equal(keys_lookup(f->keys, "abc", 0, &c), KEYS_UNKNOWN);
}

static void
test_lookup_malformed_skipped(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;

	write_sample(f);
	assert_int_equal(lookup(f->keys, "key-badid", &c), KEYS_UNKNOWN);
	assert_int_equal(lookup(f->keys, "key-space", &c), KEYS_UNKNOWN);
	assert_int_equal(lookup(f->keys, "key-noscope", &c), KEYS_UNKNOWN);
	assert_int_equal(lookup(f->keys, "key-ghost", &c), KEYS_UNKNOWN);
}

static void
test_lookup_missing_file(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;

	assert_int_equal(lookup(f->keys, "key-acme", &c), KEYS_ERROR);
}

static void
test_lookup_empty_file(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;

	tu_write_text(f->keys, "");
	assert_int_equal(lookup(f->keys, "key-acme", &c), KEYS_UNKNOWN);
}

static void
test_lookup_no_trailing_newline(void **state)
{
	struct fixture	*f = *state;
	char		 text[256];

	tu_key_line(text, sizeof(text), "acme", "key-acme", "sms", "");
	text[strlen(text) - 1] = '\0';
	tu_write_text(f->keys, text);
	assert_key(f, "key-acme", "acme", SCOPE_SMS);
}

/*
 * A line is read whole however long it is: a long comment that ends in
 * what looks like a key line does not authenticate, and a long line is
 * one malformed line, not two.
 */
static void
test_lookup_long_lines(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 text[4096], line[256];
	size_t		 pad;

	for (pad = 400; pad < 1200; pad += 111) {
		text[0] = '#';
		memset(text + 1, 'x', pad);
		text[pad + 1] = '\0';
		tu_key_line(line, sizeof(line), "evil", "key-evil", "*", "");
		strcat(text, line);
		tu_key_line(line, sizeof(line), "acme", "key-acme", "sms", "");
		strcat(text, line);
		tu_write_text(f->keys, text);
		assert_int_equal(keys_lookup(f->keys, "key-evil", 8, &c),
		    KEYS_UNKNOWN);
		assert_int_equal(keys_lookup(f->keys, "key-acme", 8, &c),
		    KEYS_OK);
		/* The same without the '#': one line, malformed. */
		text[0] = 'x';
		tu_write_text(f->keys, text);
		assert_int_equal(keys_lookup(f->keys, "key-evil", 8, &c),
		    KEYS_UNKNOWN);
	}
}

/* FLAGS: a comma list of disabled and test, each once; else malformed. */
static void
test_lookup_flags(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 text[2048], line[256];

	text[0] = '\0';
	tu_key_line(line, sizeof(line), "sand", "key-test", "*", ":test");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "gone", "key-gone", "*",
	    ":test,disabled");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "odd", "key-odd", "*", ":bogus");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "twice", "key-twice", "*",
	    ":test,test");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "empty", "key-empty", "*", ":");
	strcat(text, line);
	tu_key_line(line, sizeof(line), "live", "key-live", "sms", "");
	strcat(text, line);
	tu_write_text(f->keys, text);
	assert_int_equal(keys_lookup(f->keys, "key-test", 8, &c), KEYS_OK);
	assert_true(c.test);
	assert_int_equal(keys_lookup(f->keys, "key-gone", 8, &c),
	    KEYS_DISABLED);
	assert_int_equal(keys_lookup(f->keys, "key-odd", 7, &c), KEYS_UNKNOWN);
	assert_int_equal(keys_lookup(f->keys, "key-twice", 9, &c),
	    KEYS_UNKNOWN);
	assert_int_equal(keys_lookup(f->keys, "key-empty", 9, &c),
	    KEYS_UNKNOWN);
	assert_int_equal(keys_lookup(f->keys, "key-live", 8, &c), KEYS_OK);
	assert_false(c.test);
}

/* A FIFO as the keys file is an error at once, not a hang. */
static void
test_lookup_fifo(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;

	unlink(f->keys);
	assert_int_equal(mkfifo(f->keys, 0600), 0);
	alarm(5);
	assert_int_equal(keys_lookup(f->keys, "key-acme", 8, &c), KEYS_ERROR);
	alarm(0);
}

static void
test_lookup_crlf_lines(void **state)
{
	struct fixture	*f = *state;
	struct client	 c;
	char		 text[512], line[256];

	/* A keys file edited on another system: CRLF line ends. */
	tu_key_line(line, sizeof(line), "acme", "key-acme", "sms,ott", "");
	line[strlen(line) - 1] = '\0';
	snprintf(text, sizeof(text), "# keys\r\n%s\r\n", line);
	tu_key_line(line, sizeof(line), "old", "key-old", "sms", ":disabled");
	line[strlen(line) - 1] = '\0';
	strcat(text, line);
	strcat(text, "\r\n");
	tu_write_text(f->keys, text);
	assert_int_equal(lookup(f->keys, "key-acme", &c), KEYS_OK);
	assert_int_equal(c.scopes, SCOPE_SMS | SCOPE_OTT);
	assert_int_equal(lookup(f->keys, "key-old", &c), KEYS_DISABLED);
}

static void
test_scopes_parse(void **state)
{
	unsigned	s;

	(void)state;
	s = 0;
	assert_int_equal(keys_scopes_parse("sms", &s), 0);
	assert_int_equal(s, SCOPE_SMS);
	assert_int_equal(keys_scopes_parse("sms,ott", &s), 0);
	assert_int_equal(s, SCOPE_SMS | SCOPE_OTT);
	assert_int_equal(keys_scopes_parse("email,voice", &s), 0);
	assert_int_equal(s, SCOPE_EMAIL | SCOPE_VOICE);
	assert_int_equal(keys_scopes_parse("sms,ott,email,voice", &s), 0);
	assert_int_equal(s, SCOPE_ALL);
	assert_int_equal(keys_scopes_parse("*", &s), 0);
	assert_int_equal(s, SCOPE_ALL);
	assert_int_equal(keys_scopes_parse("bogus", &s), -1);
	assert_int_equal(keys_scopes_parse("sms,bogus", &s), -1);
	assert_int_equal(keys_scopes_parse("smsx", &s), -1);
	assert_int_equal(keys_scopes_parse("sm", &s), -1);
	/* metrics and admin are no channels: "*" grants neither. */
	assert_int_equal(keys_scopes_parse("admin", &s), 0);
	assert_int_equal(s, SCOPE_ADMIN);
	assert_int_equal(keys_scopes_parse("metrics", &s), 0);
	assert_int_equal(s, SCOPE_METRICS);
	assert_int_equal(keys_scopes_parse("*,admin,metrics", &s), 0);
	assert_int_equal(s, SCOPE_ALL | SCOPE_ADMIN | SCOPE_METRICS);
	assert_int_equal(keys_scopes_parse("*", &s), 0);
	assert_int_equal(s & (SCOPE_ADMIN | SCOPE_METRICS), 0);
	assert_int_equal(keys_scopes_parse("admins", &s), -1);
	assert_int_equal(keys_scopes_parse("metric", &s), -1);
	assert_int_equal(keys_scopes_parse("sms,", &s), -1);
}

static void
test_client_valid(void **state)
{
	char	id[80];

	(void)state;
	assert_true(valid_client_id("acme"));
	assert_true(valid_client_id("a.b-c_1"));
	assert_true(valid_client_id("A"));
	memset(id, 'x', 64);
	id[64] = '\0';
	assert_true(valid_client_id(id));
	memset(id, 'x', 65);
	id[65] = '\0';
	assert_false(valid_client_id(id));
	assert_false(valid_client_id(""));
	assert_false(valid_client_id(".acme"));
	assert_false(valid_client_id(".."));
	assert_false(valid_client_id("a:b"));
	assert_false(valid_client_id("a b"));
	assert_false(valid_client_id("a/b"));
	assert_false(valid_client_id("a\nb"));
	assert_false(valid_client_id("caf\xc3\xa9"));
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, keysfile_setup, \
	    tu_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_known_vectors),
		T(test_lookup_ok),
		T(test_lookup_uses_len),
		T(test_lookup_unknown),
		T(test_lookup_disabled),
		T(test_lookup_empty_key),
		T(test_lookup_malformed_skipped),
		T(test_lookup_missing_file),
		T(test_lookup_empty_file),
		T(test_lookup_no_trailing_newline),
		T(test_lookup_crlf_lines),
		T(test_lookup_long_lines),
		T(test_lookup_fifo),
		T(test_lookup_flags),
		T(test_lookup_text),
		cmocka_unit_test(test_scopes_parse),
		cmocka_unit_test(test_client_valid),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
