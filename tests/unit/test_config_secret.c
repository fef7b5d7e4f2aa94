/*
 * test_config_secret.c: unit tests for lib/base/config_secret.c
 * (msgspool.conf(5), secrets): inline or from a file (relative to the
 * config's), one newline removed, never empty, a missing file named,
 * and each key's kind (a word, a Standard Webhooks secret, a key).
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
test_secret_from_file(void **state)
{
	const char	*dir = *state;
	char		 tok[512], conf[1024], err[256] = "";
	struct config	*c;
	char		*s;

	write_file(dir, "token", "s3cret-value\n", tok, sizeof(tok));
	snprintf(conf, sizeof(conf), "[sms]\nauth-token-file = %s\n", tok);
	c = parse_ok(conf);
	s = config_secret(c, "sms", "auth-token", err, sizeof(err));
	if (s == NULL)
		fail_msg("config_secret: %s", err);
	assert_string_equal(s, "s3cret-value");
	free(s);
	config_free(c);
}

static void
test_secret_one_newline_removed(void **state)
{
	const char	*dir = *state;
	char		 tok[512], conf[1024], err[256] = "";
	struct config	*c;
	char		*s;

	/* Only one trailing newline goes. */
	write_file(dir, "token", "abc\n\n", tok, sizeof(tok));
	snprintf(conf, sizeof(conf), "[sms]\nauth-token-file = %s\n", tok);
	c = parse_ok(conf);
	s = config_secret(c, "sms", "auth-token", err, sizeof(err));
	assert_non_null(s);
	assert_string_equal(s, "abc\n");
	free(s);
	config_free(c);

	/* And none when there is none. */
	write_file(dir, "token2", "xyz", tok, sizeof(tok));
	snprintf(conf, sizeof(conf), "[sms]\nauth-token-file = %s\n", tok);
	c = parse_ok(conf);
	s = config_secret(c, "sms", "auth-token", err, sizeof(err));
	assert_non_null(s);
	assert_string_equal(s, "xyz");
	free(s);
	config_free(c);
}

static void
test_secret_relative_file(void **state)
{
	const char	*dir = *state;
	char		 tok[512], conf[512], err[256] = "";
	struct config	*c;
	char		*s;

	/* A relative NAME-file is taken relative to the config's directory. */
	write_file(dir, "token", "rel-secret\n", tok, sizeof(tok));
	write_file(dir, "msgspool.conf", "[sms]\nauth-token-file = token\n",
	    conf, sizeof(conf));
	c = config_load(conf, err, sizeof(err));
	if (c == NULL)
		fail_msg("config_load: %s", err);
	s = config_secret(c, "sms", "auth-token", err, sizeof(err));
	if (s == NULL)
		fail_msg("config_secret: %s", err);
	assert_string_equal(s, "rel-secret");
	free(s);
	config_free(c);
}

static void
test_secret_inline(void **state)
{
	struct config	*c;
	char		 err[256] = "";
	char		*s;

	(void)state;
	c = parse_ok("[smtp]\npassword = hunter2\n");
	s = config_secret(c, "smtp", "password", err, sizeof(err));
	assert_non_null(s);
	assert_string_equal(s, "hunter2");
	free(s);
	config_free(c);
}

static void
test_secret_missing_file(void **state)
{
	const char	*dir = *state;
	char		 conf[1024], err[256] = "";
	struct config	*c;

	snprintf(conf, sizeof(conf), "[sms]\nauth-token-file = %s/nope\n",
	    dir);
	c = parse_ok(conf);
	assert_null(config_secret(c, "sms", "auth-token", err, sizeof(err)));
	assert_true(err[0] != '\0');
	config_free(c);
}

static void
test_secret_absent(void **state)
{
	struct config	*c;
	char		 err[256] = "";

	(void)state;
	c = parse_ok("[sms]\nprovider = twilio\n");
	assert_null(config_secret(c, "sms", "auth-token", err, sizeof(err)));
	/* Not read from another section either. */
	config_free(c);
	c = parse_ok("auth-token = top\n[sms]\nprovider = twilio\n");
	assert_null(config_secret(c, "sms", "auth-token", err, sizeof(err)));
	config_free(c);
}

/*
 * config_secret of [s] key in text: want, or NULL with a reason that
 * names the section, the key and why.
 */
static void
secret_is(const char *text, const char *key, const char *want,
    const char *why)
{
	struct config	*c = parse_ok(text);
	char		 err[512] = "", *s;

	s = config_secret(c, "s", key, err, sizeof(err));
	config_free(c);
	if (want != NULL && (s == NULL || strcmp(s, want) != 0))
		fail_msg("%s: '%s' (%s), wanted '%s'", text, s ? s : "", err,
		    want);
	if (want == NULL && (s != NULL || strstr(err, "[s] ") == NULL ||
	    strstr(err, why) == NULL))
		fail_msg("%s: '%s', wanted [s] and %s", text, err, why);
	free(s);
}

static void
test_secret_never_empty(void **state)
{
	/* A file's bytes, as the file of a key; why it is refused. */
	static const struct {
		const char	*bytes;
		size_t		 len;
		const char	*why;
	} files[] = {
		{ "", 0, "token-file: empty" }, { "\r\n", 2, "empty" },
		{ " \t\n", 3, "token-file: blank" },
		/* A NUL would cut it short: "\0abc" is "" to its users. */
		{ "\0abc\n", 5, "token-file: holds a NUL" },
	};
	const char	*dir = *state;
	char		 f[512], conf[1200];
	size_t		 i;
	int		 fd;

	secret_is("[s]\ntoken =\n", "token", NULL, "token: empty");
	secret_is("[s]\ntoken-file =\n", "token", NULL, "token-file: empty");
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(f, sizeof(f), "%s/secret%zu", dir, i);
		if ((fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1 ||
		    write(fd, files[i].bytes, files[i].len) !=
		    (ssize_t)files[i].len || close(fd) == -1)
			fail_msg("%s: %s", f, strerror(errno));
		snprintf(conf, sizeof(conf), "[s]\ntoken-file = %s\n", f);
		secret_is(conf, "token", NULL, files[i].why);
		/* An empty value beside it changes nothing. */
		snprintf(conf, sizeof(conf), "[s]\ntoken =\ntoken-file = %s\n",
		    f);
		secret_is(conf, "token", NULL, files[i].why);
	}
	/* A word of one character is a word: the provider judges it. */
	secret_is("[s]\nverify-token = v\n", "verify-token", "v", NULL);
}

static void
test_secret_empty_does_not_hide_file(void **state)
{
	const char	*dir = *state;
	char		 f[512], conf[1200];

	write_file(dir, "app", "from-the-file\n", f, sizeof(f));
	/* Either order: the empty placeholder gives way to the file. */
	snprintf(conf, sizeof(conf), "[s]\nkey =\nkey-file = %s\n", f);
	secret_is(conf, "key", "from-the-file", NULL);
	snprintf(conf, sizeof(conf), "[s]\nkey-file = %s\nkey =\n", f);
	secret_is(conf, "key", "from-the-file", NULL);
	/* A value that is there still wins over it. */
	snprintf(conf, sizeof(conf), "[s]\nkey = inline\nkey-file = %s\n", f);
	secret_is(conf, "key", "inline", NULL);
}

static void
test_secret_whsec_kinds(void **state)
{
	/* 24 bytes; 23 bytes, 1 byte, none, not base64, no "whsec_". */
	const char	*ok = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	const char	*bad[] = { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",
	    "whsec_aw==", "whsec_", "whsec_!!!!", ok + 6 };
	char		 conf[256];
	unsigned char	*k;
	size_t		 i, len;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(conf, sizeof(conf), "[s]\nreceipt-secret = %s\n"
		    "webhook-secret = %s\n", bad[i], bad[i]);
		secret_is(conf, "receipt-secret", NULL, "of 24 bytes or more");
		secret_is(conf, "webhook-secret", NULL, "of 24 bytes or more");
	}
	snprintf(conf, sizeof(conf), "[s]\nreceipt-secret = %s\n", ok);
	secret_is(conf, "receipt-secret", ok, NULL);
	assert_non_null(k = config_whsec_key(ok, &len));
	assert_int_equal(len, 24);
	free(k);
	assert_null(config_whsec_key(bad[0], &len));
	assert_null(config_whsec_key(NULL, &len));
}

static void
test_secret_key_kind(void **state)
{
	/* unsubscribe-secret: whsec_ and 24 bytes, or 24 bytes of any. */
	const char	*whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	const char	*word = "0123456789abcdef01234567";
	struct config	*c;
	char		 conf[256], err[512] = "";
	unsigned char	*k;
	size_t		 len;

	(void)state;
	snprintf(conf, sizeof(conf), "[s]\nunsubscribe-secret = %s\n", whsec);
	secret_is(conf, "unsubscribe-secret", whsec, NULL);
	snprintf(conf, sizeof(conf), "[s]\nunsubscribe-secret = %s\n", word);
	secret_is(conf, "unsubscribe-secret", word, NULL);
	/* 23 bytes; whsec_ that is not 24 bytes of base64. */
	snprintf(conf, sizeof(conf), "[s]\nunsubscribe-secret = %.23s\n",
	    word);
	secret_is(conf, "unsubscribe-secret", NULL, "shorter than 24 bytes");
	secret_is("[s]\nunsubscribe-secret = whsec_aw==\n",
	    "unsubscribe-secret", NULL, "not the base64 of 24 bytes");
	secret_is("[s]\nunsubscribe-secret = whsec_" "0123456789abcdef0123456789"
	    "!\n", "unsubscribe-secret", NULL, "not the base64 of 24 bytes");
	secret_is("[s]\nunsubscribe-secret =\n", "unsubscribe-secret", NULL,
	    "unsubscribe-secret: empty");
	/* console-secret: the same kind. */
	snprintf(conf, sizeof(conf), "[s]\nconsole-secret = %s\n", word);
	secret_is(conf, "console-secret", word, NULL);
	snprintf(conf, sizeof(conf), "[s]\nconsole-secret = %.23s\n", word);
	secret_is(conf, "console-secret", NULL, "shorter than 24 bytes");
	/* The key: the decoded bytes of whsec_, else the bytes as they are. */
	assert_non_null(k = config_secret_key(whsec, &len));
	assert_int_equal(len, 24);
	free(k);
	assert_non_null(k = config_secret_key(word, &len));
	assert_int_equal(len, 24);
	assert_memory_equal(k, word, 24);
	free(k);
	assert_null(config_secret_key("short", &len));
	assert_int_equal(len, 0);
	assert_null(config_secret_key(NULL, &len));
	/* A top-level secret: its reason names the key alone. */
	c = parse_ok("unsubscribe-secret = short\n[s]\nx = y\n");
	assert_int_equal(config_secrets_check(c, NULL, err, sizeof(err)), -1);
	assert_string_equal(err, "unsubscribe-secret: shorter than 24 bytes");
	assert_null(config_secret(c, NULL, "unsubscribe-secret-x", err,
	    sizeof(err)));
	assert_string_equal(err, "neither unsubscribe-secret-x nor "
	    "unsubscribe-secret-x-file");
	config_free(c);
}

static void
test_secrets_check(void **state)
{
	struct config	*c;
	char		 err[512] = "";

	(void)state;
	/* Absent secrets are no error; given ones are checked. */
	c = parse_ok("[s]\ntoken = t\n[t]\nverify-token =\n"
	    "[u]\nreceipt-secret-file = /nonexistent/x\n");
	assert_int_equal(config_secrets_check(c, "s", err, sizeof(err)), 0);
	assert_false(config_secret_given(c, "s", "app-secret"));
	assert_true(config_secret_given(c, "t", "verify-token"));
	assert_true(config_secret_given(c, "u", "receipt-secret"));
	assert_int_equal(config_secrets_check(c, "t", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "[t] verify-token: empty"));
	assert_int_equal(config_secrets_check(c, "u", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "[u] receipt-secret-file: "));
	config_free(c);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup_tmp, tu_teardown)
	const struct CMUnitTest tests[] = {
		T(test_secret_from_file),
		T(test_secret_one_newline_removed),
		T(test_secret_relative_file),
		cmocka_unit_test(test_secret_inline),
		T(test_secret_missing_file),
		cmocka_unit_test(test_secret_absent),
		T(test_secret_never_empty),
		T(test_secret_empty_does_not_hide_file),
		cmocka_unit_test(test_secret_whsec_kinds),
		cmocka_unit_test(test_secret_key_kind),
		cmocka_unit_test(test_secrets_check),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
