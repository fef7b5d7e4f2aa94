/*
 * test_msgdoc_receipt.c: what receipts change in the spool document
 * (lib/spool/msgdoc_receipt.c): a message in parts, whose receipts may
 * speak of a message, a receipt document.  A receipt applied to a
 * message's status: test_msgdoc.c, test_status.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <jansson.h>

#include "spool/msgdoc.h"

/* A message in parts: delivered once every part is, undelivered at once. */
static void
test_parts(void **state)
{
	json_t	*doc, *rc;
	int	 changed;

	(void)state;
	doc = json_pack("{s:{s:s, s:s, s:[s, s, s]}}", "providerReply",
	    "provider", "smpp", "messageId", "A", "partIds", "A", "B", "C");
	assert_string_equal(msgdoc_provider_part(doc, 0), "A");
	assert_string_equal(msgdoc_provider_part(doc, 2), "C");
	assert_null(msgdoc_provider_part(doc, 3));
	assert_null(msgdoc_part_receipt(doc, "A", "delivered", &changed));
	assert_true(changed);
	assert_null(msgdoc_part_receipt(doc, "A", "delivered", &changed));
	assert_false(changed);
	assert_null(msgdoc_part_receipt(doc, "C", "delivered", &changed));
	assert_string_equal(msgdoc_part_receipt(doc, "B", "delivered",
	    &changed), "delivered");
	assert_string_equal(json_string_value(json_object_get(
	    json_object_get(doc, "partStatus"), "B")), "delivered");
	/* Not a part of it: the receipt speaks for the message. */
	assert_string_equal(msgdoc_part_receipt(doc, "Z", "delivered",
	    &changed), "delivered");
	assert_false(changed);
	assert_string_equal(msgdoc_part_receipt(doc, NULL, "read", &changed),
	    "read");
	json_decref(doc);

	doc = json_pack("{s:{s:s, s:s, s:[s, s]}}", "providerReply",
	    "provider", "smpp", "messageId", "A", "partIds", "A", "B");
	assert_string_equal(msgdoc_part_receipt(doc, "B", "undelivered",
	    &changed), "undelivered");
	json_decref(doc);

	/* One part, or another provider: its id is part 0. */
	doc = json_pack("{s:{s:s, s:s}}", "providerReply", "provider",
	    "twilio", "sid", "SM1");
	assert_string_equal(msgdoc_provider_part(doc, 0), "SM1");
	assert_null(msgdoc_provider_part(doc, 1));
	assert_string_equal(msgdoc_part_receipt(doc, "SM1", "delivered",
	    &changed), "delivered");
	json_decref(doc);

	rc = msgdoc_receipt_new("01M8000000000000000000000A", "smpp", NULL,
	    "0A1B", "undelivered", "UNDELIV", 0, json_pack("{s:s}", "code",
	    "034"));
	assert_non_null(rc);
	assert_string_equal(json_string_value(json_object_get(rc,
	    "providerMessageId")), "0A1B");
	assert_true(json_is_null(json_object_get(rc, "message")));
	assert_string_equal(json_string_value(json_object_get(rc, "at")),
	    "1970-01-01T00:00:00Z");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    rc, "error"), "code")), "034");
	json_decref(rc);
}

/* A message of channel sent by provider (NULL: none named). */
static json_t *
sent_by(const char *channel, const char *provider)
{
	json_t	*doc;

	doc = json_pack("{s:s?, s:o}", "channel", channel, "providerReply",
	    provider ? json_pack("{s:s}", "provider", provider) :
	    json_null());
	assert_non_null(doc);
	return doc;
}

/* Only the provider that sent a message speaks of it; read only OTT. */
static void
test_receipt_applies(void **state)
{
	static const struct {
		const char	*channel, *provider, *state;
		const char	*source, *status;
		const char	*why;		/* NULL: it applies */
	} cases[] = {
		{ "sms", "twilio", "sent", "twilio", "delivered", NULL },
		{ "voice", "twilio", "sent", "twilio", "undelivered", NULL },
		{ "ott", "whatsapp", "sent", "whatsapp", "read", NULL },
		{ "sms", "http", "sent", "http", "delivered", NULL },
		{ "voice", "http", "sent", "http", "sent", NULL },
		{ "ott", "http", "sent", "http", "read", NULL },
		{ "sms", "smpp", "sent", "smpp", "undelivered", NULL },
		{ "email", "smtp", "sent", "email", "undelivered", NULL },
		{ "email", "file", "sent", "email", "delayed", NULL },
		{ "email", "test", "sent", "test", "delivered", NULL },
		/* Another provider's message. */
		{ "sms", "file", "sent", "http", "read",
		    "the message was sent by file, not http" },
		{ "sms", "file", "sent", "http", "delivered", "sent by file" },
		{ "ott", "whatsapp", "sent", "twilio", "undelivered",
		    "the message was sent by whatsapp, not twilio" },
		{ "sms", "twilio", "sent", "smpp", "delivered", "by twilio" },
		{ "sms", "http", "sent", "twilio", "delivered", "by http" },
		{ "sms", "test", "sent", "twilio", "delivered", "by test" },
		{ "sms", "twilio", "sent", "test", "delivered", "by twilio" },
		{ "email", "test", "sent", "email", "undelivered", "by test" },
		{ "sms", NULL, "sent", "twilio", "delivered",
		    "sent by no provider it records, not twilio" },
		{ "sms", "twilio", "sent", NULL, "delivered",
		    "not an unnamed source" },
		{ "sms", "twilio", "sent", "pigeon", "delivered", "not pigeon" },
		/* read: an OTT message's. */
		{ "sms", "http", "sent", "http", "read",
		    "read is for ott messages, not sms" },
		{ "voice", "http", "sent", "http", "read", "not voice" },
		{ "sms", "twilio", "sent", "twilio", "read", "not sms" },
		/* A bounce: an email's. */
		{ "sms", "file", "sent", "email", "undelivered",
		    "email receipts are not for sms messages" },
		{ "ott", "http", "sent", "email", "delivered", "sent by http" },
		/* Not sent yet: only its channel is known. */
		{ "sms", NULL, "new", "email", "undelivered",
		    "email receipts are not for sms messages" },
		{ "email", NULL, "new", "email", "undelivered", NULL },
		{ "email", "smtp", "deferred", "email", "delivered", NULL },
		{ "sms", "twilio", "deferred", "http", "delivered", NULL },
		{ "sms", NULL, "cur", "http", "read", "read is for ott" },
		{ "ott", NULL, "new", "twilio", "delivered",
		    "twilio receipts are not for ott messages" },
		/* Written by hand: a channel its provider does not serve. */
		{ "email", "twilio", "sent", "twilio", "delivered",
		    "twilio receipts are not for email messages" },
		{ "fax", "twilio", "sent", "twilio", "delivered",
		    "not for such messages" },
		{ NULL, "twilio", "sent", "twilio", "delivered",
		    "not for such messages" },
	};
	char	 why[256];
	json_t	*doc;
	size_t	 i;
	int	 ok;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		doc = sent_by(cases[i].channel, cases[i].provider);
		why[0] = '\0';
		ok = msgdoc_receipt_applies(doc, cases[i].state,
		    cases[i].source, cases[i].status, why, sizeof(why));
		if (ok != (cases[i].why == NULL) || (cases[i].why != NULL &&
		    strstr(why, cases[i].why) == NULL))
			fail_msg("case %zu: %d \"%s\"", i, ok, why);
		json_decref(doc);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_receipt_applies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
