/*
 * test_config_values.c: unit tests for lib/base/config.c (msgspool.conf(5)):
 * the values a config gives (paths, secrets, sizes, seconds, limits) and
 * the default path of the config.
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
