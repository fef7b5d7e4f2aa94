/*
 * test_msgdoc.c: the spool document's fields.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <jansson.h>

#include "base/rfc3339.h"
#include "base/ulid.h"
#include "spool/msgdoc.h"

static json_t *
fresh(char *id, time_t notbefore)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", "acme", notbefore, json_pack("{s:s,s:s}",
	    "to", "+4915112345678", "body", "hi"));
	assert_non_null(doc);
	return doc;
}

static time_t
field_time(const json_t *doc, const char *key)
{
	time_t	t = 0;

	assert_int_equal(rfc3339_parse(json_string_value(json_object_get(doc,
	    key)), &t), 0);
	return t;
}

static void
test_new(void **state)
{
	char	 id[ULID_LEN + 1], name[64];
	json_t	*doc;
	time_t	 now = time(NULL);

	(void)state;
	doc = fresh(id, 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "version")),
	    MSGDOC_VERSION);
	assert_string_equal(msgdoc_id(doc), id);
	assert_string_equal(msgdoc_channel(doc), "sms");
	assert_string_equal(msgdoc_client(doc), "acme");
	assert_string_equal(msgdoc_recipient(doc), "+4915112345678");
	assert_int_equal(msgdoc_attempts(doc), 0);
	assert_true(json_is_null(json_object_get(doc, "lastError")));
	assert_true(json_is_null(json_object_get(doc, "providerReply")));
	assert_null(json_object_get(doc, "sendAt"));
	assert_true(msgdoc_due(doc) >= now - 1 && msgdoc_due(doc) <= now + 1);
	snprintf(name, sizeof(name), "%s.json", id);
	assert_int_equal(msgdoc_check(doc, "new", name, NULL, 0), 0);
	json_decref(doc);
	/* Scheduled: sendAt, and max-age counts from it. */
	doc = fresh(id, now + 3600);
	assert_int_equal(field_time(doc, "sendAt"), now + 3600);
	assert_int_equal(msgdoc_due(doc), now + 3600);
	assert_int_equal(msgdoc_age_from(doc), now + 3600);
	json_decref(doc);
	assert_null(msgdoc_new(id, "sms", "acme", 0, NULL));
}

static void
test_check(void **state)
{
	char	 id[ULID_LEN + 1], other[ULID_LEN + 1], name[64], err[256];
	json_t	*doc;

	(void)state;
	doc = fresh(id, 0);
	assert_int_equal(ulid_new(other), 0);
	snprintf(name, sizeof(name), "%s.json", other);
	assert_int_equal(msgdoc_check(doc, "new", name, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "its id is not its file name"));
	/* The name may be the id, or the id and a suffix after a dot. */
	assert_int_equal(msgdoc_check(doc, "new", id, NULL, 0), 0);
	snprintf(name, sizeof(name), "%sX", id);
	assert_int_equal(msgdoc_check(doc, "new", name, NULL, 0), -1);
	json_object_set_new(doc, "id", json_string("/../../../pwned"));
	assert_int_equal(msgdoc_check(doc, "new", "/../../../pwned", NULL, 0),
	    -1);
	json_object_set_new(doc, "id", json_string(id));
	json_object_set_new(doc, "version", json_integer(2));
	assert_int_equal(msgdoc_check(doc, "new", id, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "version"));
	json_decref(doc);
	assert_int_equal(msgdoc_check(json_null(), "new", id, NULL, 0), -1);
}

static void
test_attempt(void **state)
{
	char	 id[ULID_LEN + 1];
	json_t	*doc, *reply;
	time_t	 now = 1795428000;

	(void)state;
	doc = fresh(id, 0);
	reply = json_pack("{s:s}", "sid", "SM1");
	msgdoc_attempt(doc, MSG_TEMPFAIL, "HTTP 503", reply, now, now + 60,
	    NULL);
	assert_int_equal(msgdoc_attempts(doc), 1);
	assert_string_equal(json_string_value(json_object_get(doc,
	    "lastError")), "HTTP 503");
	assert_int_equal(field_time(doc, "nextAttempt"), now + 60);
	assert_int_equal(field_time(doc, "lastAttempt"), now);
	assert_true(json_equal(json_object_get(doc, "providerReply"), reply));
	msgdoc_attempt(doc, MSG_OK, NULL, reply, now + 60, 0, NULL);
	assert_int_equal(msgdoc_attempts(doc), 2);
	assert_true(json_is_null(json_object_get(doc, "lastError")));
	assert_true(json_is_null(json_object_get(doc, "nextAttempt")));
	assert_int_equal(field_time(doc, "sentAt"), now + 60);
	msgdoc_attempt(doc, MSG_PERMFAIL, "HTTP 400", NULL, now + 61, 0,
	    "older than max-age");
	assert_true(json_is_null(json_object_get(doc, "providerReply")));
	assert_string_equal(json_string_value(json_object_get(doc,
	    "gaveUp")), "older than max-age");
	json_decref(reply);
	json_decref(doc);
}

static void
test_retry_restarts_max_age(void **state)
{
	char	 id[ULID_LEN + 1];
	json_t	*doc;
	time_t	 later = time(NULL) + 7200;

	(void)state;
	doc = fresh(id, 0);
	msgdoc_retry(doc, later);
	assert_int_equal(msgdoc_age_from(doc), later);
	assert_int_equal(msgdoc_due(doc), later);
	json_decref(doc);
}

static void
test_upload(void **state)
{
	char	 id[ULID_LEN + 1], other[ULID_LEN + 1];
	json_t	*doc;
	time_t	 now = time(NULL);

	(void)state;
	assert_int_equal(ulid_new(id), 0);
	assert_int_equal(ulid_new(other), 0);
	doc = msgdoc_upload_new(id, "acme", "a.pdf", "application/pdf", 3,
	    now, "YWJj");
	assert_non_null(doc);
	assert_int_equal(msgdoc_upload_check(doc, id, now - 10), 0);
	assert_int_equal(msgdoc_upload_check(doc, other, now - 10), -1);
	/* Made before the cut: expired. */
	assert_int_equal(msgdoc_upload_check(doc, id, now + 10), -1);
	json_object_del(doc, "version");
	assert_int_equal(msgdoc_upload_check(doc, id, now - 10), -1);
	json_decref(doc);
}

static void
test_status(void **state)
{
	char	 id[ULID_LEN + 1];
	json_t	*doc, *o, *reply;
	time_t	 now = time(NULL), t;

	(void)state;
	doc = fresh(id, 0);
	assert_string_equal(msgdoc_status(doc, "new"), "queued");
	assert_string_equal(msgdoc_status(doc, "cur"), "sending");
	assert_string_equal(msgdoc_status(doc, "deferred"), "scheduled");
	assert_string_equal(msgdoc_status(doc, "failed"), "failed");
	msgdoc_attempt(doc, MSG_TEMPFAIL, "HTTP 503", NULL, now, now + 60,
	    NULL);
	assert_string_equal(msgdoc_status(doc, "deferred"), "retrying");
	o = msgdoc_status_object(doc, "deferred", 1);
	assert_string_equal(json_string_value(json_object_get(o, "status")),
	    "retrying");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    o, "error"), "message")), "HTTP 503");
	assert_non_null(json_string_value(json_object_get(o,
	    "nextAttemptAt")));
	assert_true(json_is_null(json_object_get(o, "completedAt")));
	assert_int_equal(json_array_size(json_object_get(o, "events")), 2);
	json_decref(o);
	reply = json_pack("{s:s, s:s}", "provider", "twilio", "sid", "SM9");
	msgdoc_attempt(doc, MSG_OK, NULL, reply, now + 60, 0, NULL);
	json_decref(reply);
	o = msgdoc_status_object(doc, "sent", 0);
	assert_string_equal(json_string_value(json_object_get(o, "status")),
	    "sent");
	assert_string_equal(json_string_value(json_object_get(o,
	    "provider")), "twilio");
	assert_string_equal(json_string_value(json_object_get(o,
	    "providerMessageId")), "SM9");
	assert_true(json_is_null(json_object_get(o, "error")));
	assert_null(json_object_get(o, "events"));
	json_decref(o);
	/* Final when delivered; a late receipt moves neither it nor when. */
	assert_int_equal(msgdoc_receipt(doc, "sent", "delivered", now + 70,
	    NULL), 1);
	assert_int_equal(msgdoc_receipt(doc, "sent", "sent", now + 90, NULL),
	    1);
	o = msgdoc_status_object(doc, "sent", 1);
	assert_string_equal(json_string_value(json_object_get(o, "status")),
	    "delivered");
	assert_int_equal(rfc3339_parse(json_string_value(json_object_get(o,
	    "completedAt")), &t), 0);
	assert_true(t == now + 70);
	assert_int_equal(rfc3339_parse(json_string_value(json_object_get(o,
	    "updatedAt")), &t), 0);
	assert_true(t == now + 90);
	json_decref(o);
	json_decref(doc);
	/* A failure: the provider's code, Twilio's or the Graph API's. */
	doc = fresh(id, 0);
	reply = json_pack("{s:s, s:i, s:s}", "provider", "twilio", "code",
	    21211, "message", "invalid To");
	msgdoc_attempt(doc, MSG_PERMFAIL, "HTTP 400: invalid To", reply, now,
	    0, NULL);
	json_decref(reply);
	o = msgdoc_status_object(doc, "failed", 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    o, "error"), "code")), 21211);
	assert_string_equal(json_string_value(json_object_get(o,
	    "provider")), "twilio");
	json_decref(o);
	reply = json_pack("{s:s, s:{s:i}}", "provider", "whatsapp", "error",
	    "code", 131030);
	msgdoc_attempt(doc, MSG_TEMPFAIL, "HTTP 400", reply, now, now + 60,
	    NULL);
	json_decref(reply);
	o = msgdoc_status_object(doc, "deferred", 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    o, "error"), "code")), 131030);
	json_decref(o);
	msgdoc_attempt(doc, MSG_TEMPFAIL, "timed out", NULL, now, now + 60,
	    NULL);
	o = msgdoc_status_object(doc, "deferred", 0);
	assert_true(json_is_null(json_object_get(json_object_get(o, "error"),
	    "code")));
	json_decref(o);
	/* An SMSC's command_status; 0, a session lost, is none. */
	reply = json_pack("{s:s, s:i, s:i}", "provider", "smpp", "parts", 1,
	    "commandStatus", 0x0b);
	msgdoc_attempt(doc, MSG_PERMFAIL, "ESME_RINVDSTADR", reply, now, 0,
	    NULL);
	json_decref(reply);
	o = msgdoc_status_object(doc, "failed", 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    o, "error"), "code")), 0x0b);
	json_decref(o);
	reply = json_pack("{s:s, s:i, s:i}", "provider", "smpp", "parts", 1,
	    "commandStatus", 0);
	msgdoc_attempt(doc, MSG_TEMPFAIL, "session lost", reply, now, now + 60,
	    NULL);
	json_decref(reply);
	o = msgdoc_status_object(doc, "deferred", 0);
	assert_true(json_is_null(json_object_get(json_object_get(o, "error"),
	    "code")));
	json_decref(o);
	json_decref(doc);
	/* Canceled: final, and retry undoes it. */
	doc = fresh(id, 0);
	msgdoc_cancel(doc, now);
	assert_string_equal(msgdoc_status(doc, "failed"), "canceled");
	o = msgdoc_status_object(doc, "failed", 1);
	assert_non_null(json_string_value(json_object_get(o, "completedAt")));
	json_decref(o);
	msgdoc_retry(doc, now);
	assert_string_equal(msgdoc_status(doc, "failed"), "failed");
	assert_string_equal(msgdoc_status(doc, "new"), "queued");
	json_decref(doc);
}

/*
 * The status object names its direction, the client's reference and
 * the route of the last attempt: null while there is none of either.
 */
static void
test_reference_route(void **state)
{
	char	 id[ULID_LEN + 1];
	json_t	*doc, *o;
	time_t	 now = time(NULL);

	(void)state;
	doc = fresh(id, 0);
	assert_null(msgdoc_reference(doc));
	assert_null(msgdoc_route(doc));
	msgdoc_set_reference(doc, NULL);
	assert_null(json_object_get(doc, "reference"));
	o = msgdoc_status_object(doc, "new", 1);
	assert_string_equal(json_string_value(json_object_get(o,
	    "direction")), "outbound");
	assert_true(json_is_null(json_object_get(o, "reference")));
	assert_true(json_is_null(json_object_get(o, "route")));
	json_decref(o);

	msgdoc_set_reference(doc, "order-1001 \xc3\xa9");
	assert_string_equal(msgdoc_reference(doc), "order-1001 \xc3\xa9");
	msgdoc_attempt(doc, MSG_TEMPFAIL, "HTTP 503", NULL, now, now + 60,
	    NULL);
	msgdoc_set_route(doc, "ott.3");
	msgdoc_attempt(doc, MSG_OK, NULL, NULL, now + 60, 0, NULL);
	msgdoc_set_route(doc, "sms");
	assert_string_equal(msgdoc_route(doc), "sms");
	/* Webhooks' data, without events, carries them too. */
	o = msgdoc_status_object(doc, "sent", 0);
	assert_string_equal(json_string_value(json_object_get(o,
	    "reference")), "order-1001 \xc3\xa9");
	assert_string_equal(json_string_value(json_object_get(o, "route")),
	    "sms");
	assert_string_equal(json_string_value(json_object_get(o,
	    "direction")), "outbound");
	json_decref(o);
	/* Not a string (a file edited by hand): none. */
	json_object_set_new(doc, "reference", json_integer(7));
	assert_null(msgdoc_reference(doc));
	o = msgdoc_status_object(doc, "sent", 0);
	assert_true(json_is_null(json_object_get(o, "reference")));
	json_decref(o);
	json_decref(doc);
}

/* A whole file in one buffer: from a file, from a pipe, broken JSON. */
static void
test_loadfd(void **state)
{
	json_error_t	 je;
	json_t		*doc;
	char		 path[] = "/tmp/msgspool-test-loadfd-XXXXXX", *big;
	int		 fd, p[2];
	size_t		 n = 100000;

	(void)state;
	big = malloc(n + 32);
	assert_non_null(big);
	strcpy(big, "{\"version\": 1, \"x\": \"");
	memset(big + strlen(big), 'a', n);
	strcpy(big + 21 + n, "\"}");
	assert_true((fd = mkstemp(path)) != -1);
	unlink(path);
	assert_int_equal(write(fd, big, strlen(big)), (ssize_t)strlen(big));
	lseek(fd, 0, SEEK_SET);
	doc = msgdoc_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	assert_non_null(doc);
	assert_int_equal(json_string_length(json_object_get(doc, "x")), n);
	json_decref(doc);
	close(fd);
	/* No size to start from: a pipe. */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "{\"a\": [1, 2]}", 13), 13);
	close(p[1]);
	doc = msgdoc_loadfd(p[0], 0, &je);
	close(p[0]);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "a")), 2);
	json_decref(doc);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "{\"a\": 1, \"a\": 2}", 16), 16);
	close(p[1]);
	assert_null(msgdoc_loadfd(p[0], JSON_REJECT_DUPLICATES, &je));
	close(p[0]);
	assert_true(je.line > 0);
	free(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new),
		cmocka_unit_test(test_loadfd),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_attempt),
		cmocka_unit_test(test_retry_restarts_max_age),
		cmocka_unit_test(test_upload),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_reference_route),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
