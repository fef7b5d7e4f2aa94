/*
 * test_sms.c: unit tests for lib/content/sms.c, validating one SMS and
 * building its document (queued here as sms-deliver queues it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "content/sms.h"
#include "spool/spool.h"
#include "testutil.h"

struct fixture {
	char		 dir[TU_DIR_SIZE];	/* first: see testutil.h */
	struct spool	*sp;
};

/* The client the SMS are queued for: a live key. */
static const struct client acme = { .id = "acme", .scopes = SCOPE_ALL };

static int
setup(void **state)
{
	struct fixture	*f;
	char		 err[256];

	if ((f = tu_fixture_new(sizeof(*f), "sms")) == NULL)
		return -1;
	if ((f->sp = spool_open(f->dir, 1, err, sizeof(err))) == NULL) {
		tu_fixture_free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	spool_free(f->sp);
	tu_fixture_free(f);
	return 0;
}

/* How many messages are in a state. */
static size_t
count(struct fixture *f, enum spool_dir d)
{
	char	**names;
	ssize_t	  n;

	n = spool_list(f->sp, d, &names);
	assert_true(n >= 0);
	spool_names_free(names, (size_t)n);
	return (size_t)n;
}

/*
 * Build an SMS's document and queue it where sms_build says, as
 * sms-deliver does (but for the suppressions): the status, MSG_PERMFAIL
 * with errors when it is invalid.
 */
static enum msg_status
build_queue(struct spool *sp, const struct client *client,
    const json_t *sms, const char *prefix, json_t *errors,
    struct sms_queued *q)
{
	json_t		*doc;
	enum spool_dir	 dest;
	enum msg_status	 rc;

	if ((doc = sms_build(client, sms, prefix, errors, q, &dest)) == NULL)
		return json_object_size(errors) > 0 ? MSG_PERMFAIL :
		    MSG_TEMPFAIL;
	rc = spool_enqueue(sp, doc, dest);
	json_decref(doc);
	return rc;
}

/* Queue a JSON text; returns the status, errors in *errors. */
static enum msg_status
queue(struct fixture *f, const char *text, json_t **errors,
    struct sms_queued *q)
{
	json_t		*sms;
	enum msg_status	 rc;

	sms = json_loads(text, JSON_ALLOW_NUL, NULL);
	assert_non_null(sms);
	*errors = json_object();
	rc = build_queue(f->sp, &acme, sms, "", *errors, q);
	json_decref(sms);
	return rc;
}

static void
test_queued_now(void **state)
{
	struct fixture		*f = *state;
	struct sms_queued	 q;
	json_t			*errors, *doc, *msg;
	char			 name[SPOOL_NAME_MAX], err[256];

	assert_int_equal(queue(f, "{\"recipient\":\"+4915112345678\","
	    "\"messageBody\":\"hi\"}", &errors, &q), MSG_OK);
	assert_int_equal(json_object_size(errors), 0);
	json_decref(errors);
	assert_false(q.scheduled);
	assert_true(ulid_valid(q.id));
	assert_int_equal(count(f, SPOOL_NEW), 1);
	assert_int_equal(count(f, SPOOL_DEFERRED), 0);
	snprintf(name, sizeof(name), "%s.json", q.id);
	doc = spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err));
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "channel")),
	    "sms");
	assert_string_equal(json_string_value(json_object_get(doc, "client")),
	    "acme");
	msg = json_object_get(doc, "message");
	assert_string_equal(json_string_value(json_object_get(msg, "to")),
	    "+4915112345678");
	assert_string_equal(json_string_value(json_object_get(msg, "body")),
	    "hi");
	json_decref(doc);
}

static void
test_scheduled(void **state)
{
	struct fixture		*f = *state;
	struct sms_queued	 q;
	json_t			*errors;

	assert_int_equal(queue(f, "{\"recipient\":\"+4915112345678\","
	    "\"messageBody\":\"later\",\"sendAt\":\"2099-01-01T00:00:00+02:00\"}",
	    &errors, &q), MSG_OK);
	json_decref(errors);
	assert_true(q.scheduled);
	assert_int_equal(q.send_at, 4070908800 - 7200);
	assert_int_equal(count(f, SPOOL_DEFERRED), 1);
	assert_int_equal(count(f, SPOOL_NEW), 0);
}

static void
test_past_send_at_is_now(void **state)
{
	struct fixture		*f = *state;
	struct sms_queued	 q;
	json_t			*errors;

	assert_int_equal(queue(f, "{\"recipient\":\"+4915112345678\","
	    "\"messageBody\":\"x\",\"sendAt\":\"2001-01-01T00:00:00Z\"}",
	    &errors, &q), MSG_OK);
	json_decref(errors);
	assert_false(q.scheduled);
	assert_int_equal(count(f, SPOOL_NEW), 1);
}

static void
test_invalid_spools_nothing(void **state)
{
	static const struct {
		const char	*body;
		const char	*path;
	} cases[] = {
		{ "{\"messageBody\":\"x\"}", "recipient" },
		{ "{\"recipient\":\"4915112345678\",\"messageBody\":\"x\"}",
		    "recipient" },
		{ "{\"recipient\":\"+49151\",\"messageBody\":\"x\"}",
		    "recipient" },
		{ "{\"recipient\":4915112345678,\"messageBody\":\"x\"}",
		    "recipient" },
		{ "{\"recipient\":\"+4915112345678\",\"messageBody\":\"\"}",
		    "messageBody" },
		{ "{\"recipient\":\"+4915112345678\",\"messageBody\":\"a\\u0000b\"}",
		    "messageBody" },
		{ "{\"recipient\":\"+4915112345678\",\"messageBody\":\"x\","
		    "\"sendAt\":\"tomorrow\"}", "sendAt" },
		{ "{\"recipient\":\"+4915112345678\",\"messageBody\":\"x\","
		    "\"from\":\"me\"}", "from" },
	};
	struct fixture		*f = *state;
	struct sms_queued	 q;
	json_t			*errors;
	size_t			 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(queue(f, cases[i].body, &errors, &q),
		    MSG_PERMFAIL);
		assert_non_null(json_object_get(errors, cases[i].path));
		json_decref(errors);
	}
	assert_int_equal(count(f, SPOOL_NEW), 0);
	assert_int_equal(count(f, SPOOL_DEFERRED), 0);
	assert_int_equal(count(f, SPOOL_TMP), 0);
}

static void
test_body_length_in_characters(void **state)
{
	struct fixture		*f = *state;
	struct sms_queued	 q;
	json_t			*errors, *sms;
	char			*body;
	size_t			 i;

	/* 1600 two-byte characters pass; 1601 do not. */
	body = malloc(1601 * 2 + 1);
	assert_non_null(body);
	for (i = 0; i < 1601; i++)
		memcpy(body + 2 * i, "\xc3\xa9", 2);
	body[1600 * 2] = '\0';
	sms = json_pack("{s:s, s:s}", "recipient", "+4915112345678",
	    "messageBody", body);
	errors = json_object();
	assert_int_equal(build_queue(f->sp, &acme, sms, "", errors, &q), MSG_OK);
	json_decref(sms);
	json_decref(errors);
	body[1601 * 2] = '\0';
	for (i = 0; i < 1601; i++)
		memcpy(body + 2 * i, "\xc3\xa9", 2);
	sms = json_pack("{s:s, s:s}", "recipient", "+4915112345678",
	    "messageBody", body);
	errors = json_object();
	assert_int_equal(build_queue(f->sp, &acme, sms, "", errors, &q),
	    MSG_PERMFAIL);
	assert_non_null(json_object_get(errors, "messageBody"));
	json_decref(sms);
	json_decref(errors);
	free(body);
	assert_int_equal(count(f, SPOOL_NEW), 1);
}

static void
test_prefix_in_paths(void **state)
{
	struct fixture		*f = *state;
	struct sms_queued	 q;
	json_t			*errors, *sms;

	sms = json_pack("{s:s}", "messageBody", "x");
	errors = json_object();
	assert_int_equal(build_queue(f->sp, &acme, sms, "messages[3]", errors,
	    &q), MSG_PERMFAIL);
	assert_non_null(json_object_get(errors, "messages[3].recipient"));
	json_decref(sms);
	json_decref(errors);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_queued_now),
		T(test_scheduled),
		T(test_past_send_at_is_now),
		T(test_invalid_spools_nothing),
		T(test_body_length_in_characters),
		T(test_prefix_in_paths),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
