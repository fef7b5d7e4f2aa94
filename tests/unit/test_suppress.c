/*
 * test_suppress.c: the suppression lists (lib/spool/suppress.c):
 * addresses normalized per channel, one file a suppression at a path
 * made from the client, channel and address (unsafe bytes escaped, a
 * long one cut and hashed), added once, removed (by source when asked),
 * one client's list apart from another's, and a message document's
 * recipient looked up.  Lists: test_suppress_list.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/suppress.h"
#include "testutil.h"

static void
norm_is(enum channel ch, const char *in, const char *want)
{
	char	out[SUPPRESS_ADDR_MAX];

	if (want == NULL) {
		assert_int_equal(suppress_normalize(ch, in, out, sizeof(out)),
		    -1);
		return;
	}
	assert_int_equal(suppress_normalize(ch, in, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void
test_normalize(void **state)
{
	char	small[8];

	(void)state;
	norm_is(CHANNEL_SMS, "+4915112345678", "+4915112345678");
	norm_is(CHANNEL_VOICE, "+4915112345678", "+4915112345678");
	norm_is(CHANNEL_SMS, "4915112345678", NULL);
	norm_is(CHANNEL_SMS, "+0915112345678", NULL);
	norm_is(CHANNEL_SMS, "+49 151 12345678", NULL);
	norm_is(CHANNEL_SMS, "", NULL);
	norm_is(CHANNEL_OTT, "4915112345678", "4915112345678");
	norm_is(CHANNEL_OTT, "+4915112345678", "4915112345678");
	norm_is(CHANNEL_OTT, "+", NULL);
	norm_is(CHANNEL_OTT, "abc", NULL);
	/* The domain's case goes, the local part's stays. */
	norm_is(CHANNEL_EMAIL, "Ann@Example.COM", "Ann@example.com");
	norm_is(CHANNEL_EMAIL, "ann", NULL);
	norm_is(CHANNEL_EMAIL, "ann@example.com\n", NULL);
	norm_is(CHANNEL__MAX, "+4915112345678", NULL);
	assert_int_equal(suppress_normalize(CHANNEL_SMS, NULL, small,
	    sizeof(small)), -1);
	assert_int_equal(suppress_normalize(CHANNEL_SMS, "+4915112345678",
	    small, sizeof(small)), -1);
}

/* The path of a suppression file under the fixture's spool. */
static void
file_path(const struct tu_spool *f, const char *rest, char *buf,
    size_t len)
{
	snprintf(buf, len, "%s/suppressions/%s", f->dir, rest);
}

static void
test_add_get_remove(void **state)
{
	struct tu_spool	*f = *state;
	struct stat	 st;
	json_t		*got, *doc;
	char		 path[1024];

	errno = EIO;
	assert_null(suppress_get(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678"));
	assert_int_equal(errno, 0);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "manual", "asked by phone", &got), 1);
	assert_string_equal(json_string_value(json_object_get(got,
	    "channel")), "sms");
	assert_string_equal(json_string_value(json_object_get(got,
	    "address")), "+4915112345678");
	assert_string_equal(json_string_value(json_object_get(got, "source")),
	    "manual");
	assert_string_equal(json_string_value(json_object_get(got, "reason")),
	    "asked by phone");
	assert_non_null(json_string_value(json_object_get(got, "createdAt")));
	/* Exactly the five members a client sees. */
	assert_int_equal(json_object_size(got), 5);
	json_decref(got);
	/* One file, JSON, named by the address, in dirs as new/'s. */
	file_path(f, "acme/sms/+4915112345678.json", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777 & ~0640, 0);
	doc = json_load_file(path, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "version")),
	    1);
	json_decref(doc);
	file_path(f, "acme/sms", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 02770);
	/* There already: 0, left as it was. */
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "stop", NULL, &got), 0);
	assert_string_equal(json_string_value(json_object_get(got, "source")),
	    "manual");
	json_decref(got);
	/* Another client's list, another channel: not suppressed there. */
	assert_null(suppress_get(f->sp, "other", CHANNEL_SMS,
	    "+4915112345678"));
	assert_int_equal(errno, 0);
	assert_null(suppress_get(f->sp, "acme", CHANNEL_VOICE,
	    "+4915112345678"));
	assert_int_equal(errno, 0);
	got = suppress_get(f->sp, "acme", CHANNEL_SMS, "+4915112345678");
	assert_non_null(got);
	assert_true(json_is_string(json_object_get(got, "reason")));
	json_decref(got);
	/* Removed only by its own source when one is named. */
	assert_int_equal(suppress_remove(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "stop"), 1);
	assert_int_equal(suppress_remove(f->sp, "other", CHANNEL_SMS,
	    "+4915112345678", NULL), 1);
	assert_int_equal(suppress_remove(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "manual"), 0);
	assert_null(suppress_get(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678"));
	assert_int_equal(errno, 0);
	assert_int_equal(suppress_remove(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", NULL), 1);
	file_path(f, "acme/sms/+4915112345678.json", path, sizeof(path));
	assert_int_equal(stat(path, &st), -1);
	/* A reason may be none: null. */
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_OTT,
	    "+4915112345678", "stop", NULL, &got), 1);
	assert_true(json_is_null(json_object_get(got, "reason")));
	assert_string_equal(json_string_value(json_object_get(got,
	    "address")), "4915112345678");
	json_decref(got);
	/* The normalized address is the one looked up. */
	got = suppress_get(f->sp, "acme", CHANNEL_OTT, "4915112345678");
	assert_non_null(got);
	json_decref(got);
	assert_int_equal(suppress_remove(f->sp, "acme", CHANNEL_OTT,
	    "4915112345678", "stop"), 0);
}

static void
test_invalid(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*got = (json_t *)1;
	char		 path[1024];

	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS, "12345",
	    "manual", NULL, &got), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(got);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "whim", NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(suppress_add(f->sp, "../x", CHANNEL_SMS,
	    "+4915112345678", "manual", NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(suppress_add(f->sp, ".x", CHANNEL_SMS,
	    "+4915112345678", "manual", NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL__MAX,
	    "+4915112345678", "manual", NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "manual", "\xff", NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(suppress_get(f->sp, "acme", CHANNEL_EMAIL, "nobody"));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(suppress_remove(f->sp, "acme", CHANNEL_EMAIL,
	    "nobody", NULL), -1);
	assert_int_equal(errno, EINVAL);
	/* Nothing was written for any of them. */
	file_path(f, "acme", path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
}

/* Email: domain case folded, unsafe bytes escaped, long ones hashed. */
static void
test_email_names(void **state)
{
	struct tu_spool	*f = *state;
	struct stat	 st;
	json_t		*got;
	char		 path[1024], a[300], b[300];

	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_EMAIL,
	    "Ann@Example.COM", "unsubscribe", NULL, NULL), 1);
	file_path(f, "acme/email/Ann@example.com.json", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	got = suppress_get(f->sp, "acme", CHANNEL_EMAIL, "Ann@example.com");
	assert_non_null(got);
	json_decref(got);
	/* The local part's case counts. */
	assert_null(suppress_get(f->sp, "acme", CHANNEL_EMAIL,
	    "ann@example.com"));
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_EMAIL,
	    "o'brien/x%y@example.com", "manual", NULL, NULL), 1);
	file_path(f, "acme/email/o%27brien%2Fx%25y@example.com.json", path,
	    sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	/* Longer than a name may be, escaped: cut, with a digest. */
	memset(a, '{', 64);
	snprintf(a + 64, sizeof(a) - 64, "@%0170d.example.com", 0);
	memcpy(b, a, sizeof(b));
	b[63] = '}';
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_EMAIL, a,
	    "bounce", NULL, NULL), 1);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_EMAIL, b,
	    "bounce", NULL, NULL), 1);
	got = suppress_get(f->sp, "acme", CHANNEL_EMAIL, a);
	assert_non_null(got);
	assert_string_equal(json_string_value(json_object_get(got,
	    "address")), a);
	json_decref(got);
	got = suppress_get(f->sp, "acme", CHANNEL_EMAIL, b);
	assert_non_null(got);
	assert_string_equal(json_string_value(json_object_get(got,
	    "address")), b);
	json_decref(got);
	got = suppress_list(f->sp, "acme", CHANNEL_EMAIL, NULL, 0, NULL);
	assert_int_equal(json_array_size(got), 4);
	json_decref(got);
}

/* A message's recipient, its client's, on its channel. */
static void
test_doc(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*doc, *sup;
	char		 why[64];

	doc = json_pack("{s:i, s:s, s:s, s:s, s:{s:s, s:s}}", "version", 1,
	    "id", "01M840Q7H2P5C7SYTHCZ984TVK", "channel", "email", "client",
	    "acme", "message", "to", "Ann@EXAMPLE.com", "subject", "x");
	assert_non_null(doc);
	errno = EIO;
	assert_null(suppress_doc(f->sp, doc));
	assert_int_equal(errno, 0);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_EMAIL,
	    "Ann@example.com", "unsubscribe", NULL, NULL), 1);
	sup = suppress_doc(f->sp, doc);
	assert_non_null(sup);
	assert_string_equal(suppress_why(sup, why, sizeof(why)),
	    "suppressed (unsubscribe)");
	json_decref(sup);
	/* Another client's message, another channel's: not suppressed. */
	json_object_set_new(doc, "client", json_string("other"));
	assert_null(suppress_doc(f->sp, doc));
	assert_int_equal(errno, 0);
	json_object_set_new(doc, "client", json_string("acme"));
	json_object_set_new(doc, "channel", json_string("sms"));
	/* Not an address of the channel: on no list. */
	assert_null(suppress_doc(f->sp, doc));
	assert_int_equal(errno, 0);
	/* A document of no known channel: an error. */
	json_object_set_new(doc, "channel", json_string("fax"));
	assert_null(suppress_doc(f->sp, doc));
	assert_int_equal(errno, EINVAL);
	json_decref(doc);
}

/* An SMS document of client to addr (a new reference). */
static json_t *
sms_doc(const char *client, const char *addr)
{
	json_t	*doc;

	doc = json_pack("{s:i, s:s, s:s, s:s, s:{s:s, s:s}}", "version", 1,
	    "id", "01M840Q7H2P5C7SYTHCZ984TVK", "channel", "sms", "client",
	    client, "message", "to", addr, "body", "x");
	assert_non_null(doc);
	return doc;
}

/* Whether suppress_doc_look finds doc's recipient suppressed (errno 0
 * when it does not). */
static int
looked(struct tu_spool *f, struct suppress_look *l, json_t *doc)
{
	json_t	*sup;

	errno = EIO;
	if ((sup = suppress_doc_look(f->sp, l, doc)) == NULL) {
		assert_int_equal(errno, 0);
		json_decref(doc);
		return 0;
	}
	json_decref(sup);
	json_decref(doc);
	return 1;
}

/*
 * One request's look: the same answers as suppress_doc, the list's
 * directory kept open between them (one left, the other client's, when
 * the look moves on), a list that was not there not looked for again
 * until the next request's look, and a list that cannot be read an
 * error each time, not "none".
 */
static void
test_doc_look(void **state)
{
	struct tu_spool		*f = *state;
	struct suppress_look	 l;
	json_t			*doc;
	char			 path[1024];
	FILE			*fp;
	int			 fd;

	suppress_look_init(&l);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "stop", NULL, NULL), 1);
	assert_int_equal(looked(f, &l, sms_doc("acme", "+4915112345678")), 1);
	assert_true(l.dfd != -1);
	fd = l.dfd;
	assert_int_equal(looked(f, &l, sms_doc("acme", "+4915112345679")), 0);
	assert_int_equal(looked(f, &l, sms_doc("acme", "+4915112345678")), 1);
	assert_int_equal(l.dfd, fd);
	/* No list of other's: none, and not looked for again. */
	assert_int_equal(looked(f, &l, sms_doc("other", "+4915112345678")),
	    0);
	assert_int_equal(l.dfd, -1);
	assert_int_equal(suppress_add(f->sp, "other", CHANNEL_SMS,
	    "+4915112345678", "manual", NULL, NULL), 1);
	assert_int_equal(looked(f, &l, sms_doc("other", "+4915112345678")),
	    0);
	suppress_look_end(&l);
	assert_int_equal(looked(f, &l, sms_doc("other", "+4915112345678")),
	    1);
	/* The channel's list not a directory: an error, each time. */
	assert_int_equal(suppress_remove(f->sp, "other", CHANNEL_SMS,
	    "+4915112345678", NULL), 0);
	file_path(f, "other/sms", path, sizeof(path));
	suppress_look_end(&l);
	tu_rmtree(path);
	assert_non_null(fp = fopen(path, "w"));
	fclose(fp);
	doc = sms_doc("other", "+4915112345678");
	assert_null(suppress_doc_look(f->sp, &l, doc));
	assert_int_equal(errno, ENOTDIR);
	assert_null(suppress_doc_look(f->sp, &l, doc));
	assert_int_equal(errno, ENOTDIR);
	json_decref(doc);
	suppress_look_end(&l);
}

/* A stop's confirmation goes to the number that stopped; no other reply. */
static void
test_doc_stop_reply(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*doc, *sup;

	doc = json_pack("{s:i, s:s, s:s, s:s, s:{s:s, s:s}}", "version", 1,
	    "id", "01M840Q7H2P5C7SYTHCZ984TVK", "channel", "sms", "client",
	    "acme", "message", "to", "+4915112345678", "body", "x");
	assert_non_null(doc);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "stop", NULL, NULL), 1);
	msgdoc_set_reply(doc, "01M840Q7H2P5C7SYTHCZ984TVM", "stop");
	errno = EIO;
	assert_null(suppress_doc(f->sp, doc));
	assert_int_equal(errno, 0);
	msgdoc_set_reply(doc, "01M840Q7H2P5C7SYTHCZ984TVM", "help");
	assert_non_null(sup = suppress_doc(f->sp, doc));
	json_decref(sup);
	json_object_del(doc, "inReplyTo");
	assert_non_null(sup = suppress_doc(f->sp, doc));
	json_decref(sup);
	json_decref(doc);
}

/* A file that is not a suppression: an error to a lookup, not listed. */
static void
test_broken_file(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*all;
	char		 path[1024];
	FILE		*fp;

	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "manual", NULL, NULL), 1);
	file_path(f, "acme/sms/+4915112345679.json", path, sizeof(path));
	assert_non_null(fp = fopen(path, "w"));
	fputs("{\"version\":1}\n", fp);
	fclose(fp);
	assert_null(suppress_get(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345679"));
	assert_int_equal(errno, EINVAL);
	all = suppress_list(f->sp, "acme", CHANNEL__MAX, NULL, 0, NULL);
	assert_int_equal(json_array_size(all), 1);
	json_decref(all);
	/* rm is a remove. */
	file_path(f, "acme/sms/+4915112345678.json", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_null(suppress_get(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678"));
	assert_int_equal(errno, 0);
}

/*
 * A spool opened by a request looks its lists up from the root it
 * opened; one older than a second (a daemon's) from its root opened
 * again by its path, so that a list made there since is seen.
 */
static void
test_root_opened_again(void **state)
{
	struct tu_spool	*f = *state;
	struct spool	*old, *other;
	json_t		*got;
	char		 moved[TU_DIR_SIZE + 8], err[256];

	assert_true(spool_root_fresh(f->sp));
	assert_null(suppress_get(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678"));
	assert_int_equal(errno, 0);
	/* The root replaced by another spool holding a suppression. */
	snprintf(moved, sizeof(moved), "%s.old", f->dir);
	assert_int_equal(rename(f->dir, moved), 0);
	assert_non_null(other = spool_open(f->dir, 1, err, sizeof(err)));
	assert_int_equal(suppress_add(other, "acme", CHANNEL_SMS,
	    "+4915112345678", "manual", NULL, NULL), 1);
	spool_free(other);
	/* Fresh: its own root, where there is none. */
	assert_null(suppress_get(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678"));
	/* A second old: the root there now, by its path. */
	old = f->sp;
	old->opened.tv_sec -= 2;
	assert_false(spool_root_fresh(old));
	assert_non_null(got = suppress_get(old, "acme", CHANNEL_SMS,
	    "+4915112345678"));
	json_decref(got);
	tu_rmtree(moved);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup_installed, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),
		T(test_add_get_remove),
		T(test_invalid),
		T(test_email_names),
		T(test_doc),
		T(test_doc_look),
		T(test_doc_stop_reply),
		T(test_broken_file),
		T(test_root_opened_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
