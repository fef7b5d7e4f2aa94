/*
 * test_event.c: webhook events: [client.ID] sections, secrets, the
 * filter, the event document and its body, an inbound message's event.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "spool/event.h"
#include "testutil.h"

#define SECRET	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"	/* 24 bytes */

static struct config *
conf(const char *text)
{
	struct config	*c;
	char		 err[512];

	if ((c = config_parse("/etc/msgspool/msgspool.conf", text,
	    strlen(text), err, sizeof(err))) == NULL)
		fail_msg("config_parse: %s", err);
	return c;
}

static void
test_section_client(void **state)
{
	(void)state;
	assert_string_equal(event_section_client("client.acme"), "acme");
	assert_string_equal(event_section_client("client.a-b_c.d"), "a-b_c.d");
	assert_null(event_section_client("client."));
	assert_null(event_section_client("client..x"));
	assert_null(event_section_client("clients.acme"));
	assert_null(event_section_client("sms"));
	assert_null(event_section_client(NULL));
}

static void
test_secret(void **state)
{
	char	*s;

	(void)state;
	assert_true(event_secret_valid(SECRET));
	/* 23 bytes, not whsec_, not base64. */
	assert_false(event_secret_valid("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS"));
	assert_false(event_secret_valid("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
	assert_false(event_secret_valid("whsec_!!!!"));
	assert_false(event_secret_valid(NULL));
	s = event_secret_new();
	assert_non_null(s);
	assert_true(event_secret_valid(s));
	assert_int_equal(strlen(s), 6 + 44);
	free(s);
}

static void
test_filter(void **state)
{
	(void)state;
	assert_true(event_filter_has(NULL, "sent"));
	assert_true(event_filter_has(NULL, "canceled"));
	/* An inbound message's, by default too. */
	assert_true(event_filter_has(NULL, "received"));
	assert_false(event_filter_has(NULL, "queued"));
	assert_true(event_filter_has("delivered, failed", "failed"));
	assert_false(event_filter_has("delivered,failed", "sent"));
	assert_false(event_filter_has("delivered", "deliver"));
}

static void
test_check_section(void **state)
{
	struct config	*c;
	char		 err[512];

	(void)state;
	c = conf("[client.a]\nwebhook-url = https://h.example/x\n"
	    "webhook-secret = " SECRET "\nwebhook-events = sent, read, "
	    "received\n"
	    "[client.b]\nwebhook-events = sent\n"
	    "[client.c]\nwebhook-url = ftp://h.example/\n"
	    "webhook-secret = " SECRET "\n"
	    "[client.d]\nwebhook-url = http://h.example/\n"
	    "[client.e]\nwebhook-url = http://h.example/\n"
	    "webhook-secret = whsec_c2hvcnQ=\n"
	    "[client.f]\nwebhook-events = sent,queued\n"
	    "[client..g]\n");
	assert_int_equal(event_check_section(c, "client.a", err,
	    sizeof(err)), 0);
	assert_int_equal(event_check_section(c, "client.b", err,
	    sizeof(err)), 0);
	assert_int_equal(event_check_section(c, "client.c", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "webhook-url"));
	assert_int_equal(event_check_section(c, "client.d", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "webhook-secret"));
	assert_int_equal(event_check_section(c, "client.e", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "24 bytes"));
	assert_int_equal(event_check_section(c, "client.f", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "queued"));
	assert_int_equal(event_check_section(c, "client..g", err,
	    sizeof(err)), -1);
	config_free(c);
}

/* A message's status makes an event only for a client that wants it. */
static void
test_event_of(void **state)
{
	struct config	*c;
	json_t		*doc, *ev, *body, *data;
	char		*s;
	time_t		 now = 1795428000;

	(void)state;
	c = conf("[client.a]\nwebhook-url = https://h.example/x\n"
	    "webhook-secret = " SECRET "\n"
	    "[client.b]\nwebhook-url = https://h.example/x\n"
	    "webhook-secret = " SECRET "\nwebhook-events = delivered\n");
	doc = msgdoc_new("01KXAMP1E0000000000000000A", "sms", "a", 0,
	    json_pack("{s:s, s:s}", "to", "+4915112345678", "text", "hi"));
	msgdoc_attempt(doc, MSG_OK, NULL, NULL, now, 0, NULL);
	ev = event_of(c, doc, "sent", now);
	assert_non_null(ev);
	assert_int_equal(json_integer_value(json_object_get(ev, "version")),
	    1);
	assert_true(ulid_valid(event_id(ev)));
	assert_string_equal(event_client(ev), "a");
	assert_string_equal(event_type(ev), "message.sent");
	assert_int_equal(event_attempts(ev), 0);
	assert_int_equal(event_due(ev), now);
	assert_null(event_last_error(ev));
	data = json_object_get(ev, "data");
	assert_string_equal(json_string_value(json_object_get(data, "id")),
	    "01KXAMP1E0000000000000000A");
	assert_string_equal(json_string_value(json_object_get(data,
	    "status")), "sent");
	assert_null(json_object_get(data, "events"));
	/* The body: type, timestamp and data, nothing of ours. */
	s = event_body(ev);
	body = json_loads(s, 0, NULL);
	assert_int_equal(json_object_size(body), 3);
	assert_string_equal(json_string_value(json_object_get(body, "type")),
	    "message.sent");
	assert_true(json_equal(json_object_get(body, "data"), data));
	json_decref(body);
	free(s);
	/* Retries: counted, then none left. */
	event_failed(ev, "HTTP 500", now + 5);
	assert_int_equal(event_attempts(ev), 1);
	assert_int_equal(event_due(ev), now + 5);
	assert_string_equal(event_last_error(ev), "HTTP 500");
	event_failed(ev, "HTTP 410", 0);
	assert_int_equal(event_attempts(ev), 2);
	assert_true(json_is_null(json_object_get(ev, "nextAttempt")));
	event_resend(ev, now + 99);
	assert_int_equal(event_attempts(ev), 0);
	assert_int_equal(event_due(ev), now + 99);
	json_decref(ev);
	/* b wants delivered only; c has no section; queued never. */
	json_object_set_new(doc, "client", json_string("b"));
	assert_null(event_of(c, doc, "sent", now));
	json_object_set_new(doc, "client", json_string("c"));
	assert_null(event_of(c, doc, "sent", now));
	json_object_set_new(doc, "client", json_string("a"));
	assert_null(event_of(c, doc, "new", now));
	assert_null(event_of(NULL, doc, "sent", now));
	json_decref(doc);
	config_free(c);
}

/* An inbound message's event: its object as data, for a client that
 * wants received. */
static void
test_received(void **state)
{
	struct tu_spool	*f = *state;
	struct config	*c;
	json_t		*data, *ev;
	char		 path[512], *text;
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	c = conf("[client.a]\nwebhook-url = https://h.example/x\n"
	    "webhook-secret = " SECRET "\n"
	    "[client.b]\nwebhook-url = https://h.example/x\n"
	    "webhook-secret = " SECRET "\nwebhook-events = sent\n");
	data = json_pack("{s:s, s:s}", "id", "01KXAMP1E0000000000000000A",
	    "direction", "inbound");
	assert_int_equal(event_record_received(f->sp, c, "b", data, 1), MSG_OK);
	assert_int_equal(event_record_received(f->sp, c, "z", data, 1), MSG_OK);
	snprintf(path, sizeof(path), "%s/" EVENT_AREA, f->dir);
	assert_null(opendir(path));
	assert_int_equal(event_record_received(f->sp, c, "a", data,
	    1795428000), MSG_OK);
	assert_non_null(d = opendir(path));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "%s/" EVENT_AREA "/%s", f->dir,
		    de->d_name);
		text = tu_read_text(path);
		ev = json_loads(text, 0, NULL);
		free(text);
		assert_string_equal(event_type(ev), "message.received");
		assert_string_equal(event_client(ev), "a");
		assert_int_equal(event_due(ev), 1795428000);
		assert_true(json_equal(json_object_get(ev, "data"), data));
		json_decref(ev);
	}
	closedir(d);
	assert_int_equal(n, 1);
	json_decref(data);
	config_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_section_client),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_check_section),
		cmocka_unit_test(test_event_of),
		cmocka_unit_test_setup_teardown(test_received, tu_spool_setup,
		    tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
