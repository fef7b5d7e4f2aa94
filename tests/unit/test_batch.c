/*
 * test_batch.c: the batch runner: replies in order, one commit, entries
 * the spool did not take turned into errors, and the status of a batch
 * the spool took nothing of; an entry whose recipient is suppressed
 * or that no route takes failing alone, and the one message of a
 * one-message route refused (422 suppressed, 400 no-route).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/config.h"
#include "content/route.h"
#include "http/batch.h"
#include "http/http.h"
#include "spool/spool.h"
#include "spool/suppress.h"
#include "testutil.h"

/* Add a good entry (a document for dest) or a bad one (doc NULL). */
static void
add(struct batch *b, int good, enum spool_dir dest, char *id)
{
	json_t	*doc = NULL, *res;

	if (good) {
		assert_int_equal(ulid_new(id), 0);
		doc = msgdoc_new(id, "sms", "acme", 0, json_pack("{s:s, s:s}",
		    "to", "+4915112345678", "body", "hi"));
		res = json_pack("{s:s, s:s, s:n, s:s}", "smsId", id, "status",
		    "Queued", "error", "sendAt", "x");
	} else
		res = json_pack("{s:n, s:s, s:s}", "smsId", "status", "error",
		    "error", "recipient: must be ...");
	assert_int_equal(batch_add(b, res, doc, dest), 0);
}

static int
exists(const struct tu_spool *f, const char *state, const char *id)
{
	char		path[512];
	struct stat	st;

	snprintf(path, sizeof(path), "%s/%s/%s.json", f->dir, state, id);
	return stat(path, &st) == 0;
}

static void
test_commit_in_order(void **state)
{
	struct tu_spool	*f = *state;
	struct batch	 b;
	char		 a[ULID_LEN + 1], c[ULID_LEN + 1], x[ULID_LEN + 1];
	json_t		*r;

	assert_int_equal(batch_init(&b, f->sp, NULL, 1, "smsId"), 0);
	add(&b, 1, SPOOL_NEW, a);
	add(&b, 0, SPOOL_NEW, x);
	add(&b, 1, SPOOL_DEFERRED, c);	/* grows past the first guess */
	assert_true(batch_has_doc(&b, 0));
	assert_false(batch_has_doc(&b, 1));
	assert_false(batch_has_doc(&b, 7));
	assert_int_equal(batch_commit(&b), 0);
	assert_int_equal(b.queued, 2);
	assert_true(batch_queued(&b, 0));
	assert_false(batch_queued(&b, 1));
	assert_true(batch_queued(&b, 2));
	assert_true(exists(f, "new", a));
	assert_true(exists(f, "deferred", c));
	r = batch_replies(&b);
	assert_int_equal(json_array_size(r), 3);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(r, 0), "smsId")), a);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(r, 1), "status")), "error");
	batch_free(&b);
	batch_free(&b);		/* twice is harmless */
}

/*
 * The spool takes none for now (here: no file descriptor left, as a
 * full disk would refuse them): 503, and every good entry says to retry.
 */
static void
test_spool_takes_none_now(void **state)
{
	struct tu_spool	*f = *state;
	struct batch	 b;
	struct rlimit	 old, low;
	char		 a[ULID_LEN + 1], x[ULID_LEN + 1];
	json_t		*res;
	int		 fd, st;

	/* A first batch opens the spool's directories. */
	assert_int_equal(batch_init(&b, f->sp, NULL, 1, "smsId"), 0);
	add(&b, 1, SPOOL_NEW, a);
	assert_int_equal(batch_commit(&b), 0);
	batch_free(&b);
	assert_int_equal(batch_init(&b, f->sp, NULL, 2, "smsId"), 0);
	add(&b, 1, SPOOL_NEW, a);
	add(&b, 0, SPOOL_NEW, x);
	assert_true((fd = dup(0)) >= 0);
	close(fd);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)fd;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	st = batch_commit(&b);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(st, 503);
	assert_int_equal(b.queued, 0);
	assert_false(exists(f, "new", a));
	res = json_array_get(batch_replies(&b), 0);
	assert_true(json_is_null(json_object_get(res, "smsId")));
	assert_string_equal(json_string_value(json_object_get(res, "error")),
	    BATCH_TRY_AGAIN);
	assert_null(json_object_get(res, "sendAt"));
	batch_free(&b);
}

/* A spool broken for good (a state directory gone): 500. */
static void
test_spool_broken(void **state)
{
	struct tu_spool	*f = *state;
	struct batch	 b;
	char		 path[512], a[ULID_LEN + 1];

	snprintf(path, sizeof(path), "%s/new", f->dir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(batch_init(&b, f->sp, NULL, 1, "smsId"), 0);
	add(&b, 1, SPOOL_NEW, a);
	assert_int_equal(batch_commit(&b), 500);
	assert_int_equal(b.queued, 0);
	batch_free(&b);
}

/* Nothing good to queue is not a failure of the spool: a 200. */
static void
test_all_bad_is_not_a_failure(void **state)
{
	struct tu_spool	*f = *state;
	struct batch	 b;
	char		 x[ULID_LEN + 1];

	assert_int_equal(batch_init(&b, f->sp, NULL, 2, "smsId"), 0);
	add(&b, 0, SPOOL_NEW, x);
	add(&b, 0, SPOOL_NEW, x);
	assert_int_equal(batch_commit(&b), 0);
	assert_int_equal(b.queued, 0);
	batch_free(&b);
}

/* A suppressed recipient: that entry alone fails, before the commit. */
static void
test_suppressed_entry(void **state)
{
	struct tu_spool	*f = *state;
	struct batch	 b;
	char		 a[ULID_LEN + 1], c[ULID_LEN + 1];
	json_t		*res, *doc;

	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "stop", NULL, NULL), 1);
	assert_int_equal(batch_init(&b, f->sp, NULL, 2, "smsId"), 0);
	add(&b, 1, SPOOL_DEFERRED, a);
	/* Another number of the same client goes. */
	assert_int_equal(ulid_new(c), 0);
	doc = msgdoc_new(c, "sms", "acme", 0, json_pack("{s:s, s:s}", "to",
	    "+4915112345679", "body", "hi"));
	res = json_pack("{s:s, s:s, s:n}", "smsId", c, "status", "Queued",
	    "error");
	assert_int_equal(batch_add(&b, res, doc, SPOOL_NEW), 0);
	assert_false(batch_has_doc(&b, 0));
	assert_true(batch_has_doc(&b, 1));
	assert_int_equal(batch_commit(&b), 0);
	assert_int_equal(b.queued, 1);
	res = json_array_get(batch_replies(&b), 0);
	assert_true(json_is_null(json_object_get(res, "smsId")));
	assert_string_equal(json_string_value(json_object_get(res, "status")),
	    "error");
	assert_string_equal(json_string_value(json_object_get(res, "error")),
	    "recipient: suppressed (stop)");
	assert_null(json_object_get(res, "sendAt"));
	assert_false(exists(f, "deferred", a));
	assert_true(exists(f, "new", c));
	batch_free(&b);
	/* Every entry suppressed: a 200 of errors, not a failure. */
	assert_int_equal(batch_init(&b, f->sp, NULL, 1, "smsId"), 0);
	add(&b, 1, SPOOL_NEW, a);
	assert_int_equal(batch_commit(&b), 0);
	assert_int_equal(b.queued, 0);
	batch_free(&b);
}

/* One message: queued, or refused 422 with nothing written. */
static void
test_queue_one(void **state)
{
	struct tu_spool	*f = *state;
	struct response	*r = (struct response *)1;
	char		 a[ULID_LEN + 1];
	json_t		*doc;

	assert_int_equal(ulid_new(a), 0);
	doc = msgdoc_new(a, "voice", "acme", 0, json_pack("{s:s, s:s}", "to",
	    "+4915112345678", "say", "hi"));
	assert_int_equal(batch_queue_one(f->sp, NULL, doc, SPOOL_NEW, &r), 0);
	assert_null(r);
	assert_true(exists(f, "new", a));
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_VOICE,
	    "+4915112345678", "manual", NULL, NULL), 1);
	assert_int_equal(ulid_new(a), 0);
	json_object_set_new(doc, "id", json_string(a));
	assert_int_equal(batch_queue_one(f->sp, NULL, doc, SPOOL_NEW, &r), -1);
	assert_non_null(r);
	assert_int_equal(r->status, 422);
	assert_non_null(strstr(r->body, "urn:msgspool:problem:suppressed"));
	assert_non_null(strstr(r->body,
	    "\"errors\":{\"recipient\":[\"suppressed (manual)\"]}"));
	assert_false(exists(f, "new", a));
	response_free(r);
	json_decref(doc);
}

/* The routes of a config's text; the test fails when it has none. */
static struct route_table *
routes(const char *text, struct config **cfg)
{
	struct route_table	*t;
	char			 err[256];

	*cfg = config_parse("/etc/msgspool/msgspool.conf", text,
	    strlen(text), err, sizeof(err));
	if (*cfg == NULL)
		fail_msg("config_parse: %s", err);
	if ((t = route_table_new(*cfg, err, sizeof(err))) == NULL)
		fail_msg("route_table_new: %s", err);
	return t;
}

/* A document of channel ch (ott: channelType 2) to a recipient. */
static json_t *
doc_to(const char *ch, const char *to, char *id)
{
	json_t	*msg;

	assert_int_equal(ulid_new(id), 0);
	msg = json_pack("{s:s, s:s}", "to", to, "body", "hi");
	if (strcmp(ch, "ott") == 0)
		json_object_set_new(msg, "channelType", json_integer(2));
	return msgdoc_new(id, ch, "acme", 0, msg);
}

static const char *
noroute(const struct route_table *t, const char *ch, const char *to)
{
	static char	 buf[256];
	char		 id[ULID_LEN + 1];
	const char	*why;
	json_t		*doc;

	doc = doc_to(ch, to, id);
	why = batch_noroute(t, doc, buf, sizeof(buf));
	json_decref(doc);
	return why;
}

/* What no route takes, and why, by channel. */
static void
test_noroute(void **state)
{
	struct config		*c;
	struct route_table	*t;

	(void)state;
	t = routes("[sms]\nprefix = +49 +43\n"
	    "[route.fr]\nchannel = sms\nprefix = +336\n"
	    "[route.x]\nchannel = ott.2\nprefix = 49\n"
	    "[email]\nprefix = @example.com\n", &c);
	assert_null(noroute(t, "sms", "+4915112345678"));
	assert_null(noroute(t, "sms", "+33612345678"));
	assert_string_equal(noroute(t, "sms", "+33712345678"),
	    "no route takes this recipient (routes of sms take +49, +43, "
	    "+336)");
	/* Nothing configures voice: its own section takes everything. */
	assert_null(noroute(t, "voice", "+33712345678"));
	/* A route of ott.2 routes it without an [ott.2]: no "+" there. */
	assert_null(noroute(t, "ott", "4915112345678"));
	assert_string_equal(noroute(t, "ott", "33612345678"),
	    "no route takes this recipient (routes of channelType 2 take "
	    "49)");
	/* Email by domain, subdomains too. */
	assert_null(noroute(t, "email", "ann@example.com"));
	assert_null(noroute(t, "email", "ann@mail.EXAMPLE.com"));
	assert_string_equal(noroute(t, "email", "ann@example.org"),
	    "no route takes this recipient (routes of email take "
	    "@example.com)");
	/* No table: nothing is checked. */
	assert_null(batch_noroute(NULL, NULL, NULL, 0));
	route_table_free(t);
	config_free(c);
	/* ott.2 that nothing configures. */
	t = routes("[ott.1]\nprovider = file\n", &c);
	assert_string_equal(noroute(t, "ott", "4915112345678"),
	    "channelType 2 is not configured");
	route_table_free(t);
	config_free(c);
}

/* Many prefixes: as many as fit, then "...". */
static void
test_noroute_long(void **state)
{
	struct config		*c;
	struct route_table	*t;
	char			 text[4096];
	const char		*why;
	size_t			 i, used;

	(void)state;
	used = (size_t)snprintf(text, sizeof(text), "[sms]\nprefix =");
	for (i = 0; i < 100; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
		    " +%zu", 100000 + i);
	snprintf(text + used, sizeof(text) - used, "\n");
	t = routes(text, &c);
	why = noroute(t, "sms", "+4915112345678");
	assert_non_null(why);
	assert_true(strlen(why) < 256);
	assert_non_null(strstr(why, "(routes of sms take +100000, +100001"));
	assert_non_null(strstr(why, ", ...)"));
	route_table_free(t);
	config_free(c);
}

/* An entry no route takes fails alone, before its suppressions. */
static void
test_noroute_entry(void **state)
{
	struct tu_spool		*f = *state;
	struct config		*c;
	struct route_table	*t;
	struct batch		 b;
	char			 a[ULID_LEN + 1], x[ULID_LEN + 1];
	json_t			*res, *doc;

	t = routes("[sms]\nprefix = +49\n", &c);
	/* Suppressed as well: no-route is what it says. */
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+33612345678", "stop", NULL, NULL), 1);
	assert_int_equal(batch_init(&b, f->sp, t, 2, "smsId"), 0);
	add(&b, 1, SPOOL_NEW, a);
	/* The id made first: the reply names it. */
	doc = doc_to("sms", "+33612345678", x);
	res = json_pack("{s:s, s:s, s:n, s:s}", "smsId", x, "status",
	    "Scheduled", "error", "sendAt", "x");
	assert_int_equal(batch_add(&b, res, doc, SPOOL_DEFERRED), 0);
	assert_true(batch_has_doc(&b, 0));
	assert_false(batch_has_doc(&b, 1));
	assert_int_equal(batch_commit(&b), 0);
	assert_int_equal(b.queued, 1);
	res = json_array_get(batch_replies(&b), 1);
	assert_true(json_is_null(json_object_get(res, "smsId")));
	assert_string_equal(json_string_value(json_object_get(res, "status")),
	    "error");
	assert_string_equal(json_string_value(json_object_get(res, "error")),
	    "no-route: no route takes this recipient (routes of sms take "
	    "+49)");
	assert_null(json_object_get(res, "sendAt"));
	assert_true(exists(f, "new", a));
	assert_false(exists(f, "deferred", x));
	batch_free(&b);
	route_table_free(t);
	config_free(c);
}

/* One message no route takes: 400 no-route, nothing written. */
static void
test_noroute_one(void **state)
{
	struct tu_spool		*f = *state;
	struct config		*c;
	struct route_table	*t;
	struct response		*r = (struct response *)1;
	char			 a[ULID_LEN + 1];
	json_t			*doc;

	t = routes("[voice]\nprefix = +49\n", &c);
	doc = doc_to("voice", "+33612345678", a);
	assert_int_equal(batch_queue_one(f->sp, t, doc, SPOOL_NEW, &r), -1);
	assert_non_null(r);
	assert_int_equal(r->status, 400);
	assert_non_null(strstr(r->body, "urn:msgspool:problem:no-route"));
	assert_non_null(strstr(r->body, "\"errors\":{\"recipient\":[\"no "
	    "route takes this recipient (routes of voice take +49)\"]}"));
	assert_false(exists(f, "new", a));
	response_free(r);
	json_decref(doc);
	/* One it takes is queued. */
	doc = doc_to("voice", "+4915112345678", a);
	assert_int_equal(batch_queue_one(f->sp, t, doc, SPOOL_NEW, &r), 0);
	assert_null(r);
	assert_true(exists(f, "new", a));
	json_decref(doc);
	route_table_free(t);
	config_free(c);
}

static void
test_add_null_reply(void **state)
{
	struct batch	b;

	(void)state;
	assert_int_equal(batch_init(&b, NULL, NULL, 1, "smsId"), 0);
	assert_int_equal(batch_add(&b, NULL, json_object(), SPOOL_NEW), -1);
	assert_int_equal(json_array_size(batch_replies(&b)), 0);
	batch_free(&b);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup, tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_commit_in_order),
		T(test_spool_takes_none_now),
		T(test_spool_broken),
		T(test_all_bad_is_not_a_failure),
		T(test_suppressed_entry),
		T(test_queue_one),
		T(test_noroute_entry),
		T(test_noroute_one),
		T(test_add_null_reply),
		cmocka_unit_test(test_noroute),
		cmocka_unit_test(test_noroute_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
