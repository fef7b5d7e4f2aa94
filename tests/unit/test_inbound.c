/*
 * test_inbound.c: inbound messages read from providers' bodies
 * (lib/spool/inbound.c): Twilio's incoming-message form, WhatsApp's
 * messages[] of each type, the http provider's {"type":"inbound"}, and
 * each refused with the member at fault.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <jansson.h>

#include "spool/inbound.h"
#include "spool/inbox.h"
#include "spool/receipt.h"

#define NOW	1795428000

static const char *
str(const json_t *doc, const char *key)
{
	return json_string_value(json_object_get(doc, key));
}

static json_t *
form(const char *text)
{
	json_t	*f = receipt_form_parse(text, strlen(text));

	assert_non_null(f);
	return f;
}

static void
test_twilio(void **state)
{
	struct inbound_err	 e;
	json_t			*f, *doc;

	(void)state;
	f = form("AccountSid=AC1&MessageSid=SM1&SmsStatus=received&"
	    "From=%2B4915112345678&To=%2B15005550006&Body=Yes+please&"
	    "NumMedia=1&MediaUrl0=https%3A%2F%2Fapi.twilio.com%2Fm%2FME1&"
	    "MediaContentType0=image%2Fjpeg");
	assert_true(inbound_twilio_is(f));
	doc = inbound_twilio(f, NOW, &e);
	assert_non_null(doc);
	assert_string_equal(str(doc, "channel"), "sms");
	assert_string_equal(str(doc, "provider"), "twilio");
	assert_string_equal(str(doc, "providerMessageId"), "SM1");
	assert_string_equal(str(doc, "from"), "+4915112345678");
	assert_string_equal(str(doc, "to"), "+15005550006");
	assert_string_equal(str(doc, "text"), "Yes please");
	assert_string_equal(str(doc, "type"), "text");
	assert_string_equal(str(doc, "receivedAt"), "2026-11-23T10:00:00Z");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    doc, "media"), 0)), "https://api.twilio.com/m/ME1");
	json_decref(doc);
	json_decref(f);
	/* Twilio's WhatsApp numbers: ott, their prefix gone; no Body. */
	f = form("AccountSid=AC1&MessageSid=SM2&From=whatsapp%3A%2B491511&"
	    "To=whatsapp%3A%2B15005550006");
	doc = inbound_twilio(f, NOW, &e);
	assert_non_null(doc);
	assert_string_equal(str(doc, "channel"), "ott");
	assert_string_equal(str(doc, "from"), "+491511");
	assert_string_equal(str(doc, "to"), "+15005550006");
	assert_true(json_is_null(json_object_get(doc, "text")));
	json_decref(doc);
	json_decref(f);
	/* Status callbacks are not incoming messages. */
	f = form("AccountSid=AC1&MessageSid=SM1&MessageStatus=delivered");
	assert_false(inbound_twilio_is(f));
	json_decref(f);
	f = form("AccountSid=AC1&CallSid=CA1&CallStatus=completed");
	assert_false(inbound_twilio_is(f));
	json_decref(f);
}

static void
twilio_bad(const char *text, const char *path)
{
	struct inbound_err	 e;
	json_t			*f = form(text);

	memset(&e, 0, sizeof(e));
	assert_null(inbound_twilio(f, NOW, &e));
	assert_string_equal(e.path, path);
	assert_true(e.why[0] != '\0');
	json_decref(f);
}

static void
test_twilio_bad(void **state)
{
	(void)state;
	twilio_bad("MessageSid=SM1&To=%2B1500", "From");
	twilio_bad("MessageSid=SM1&From=%2B1&To=", "To");
	twilio_bad("From=%2B1&To=%2B2", "MessageSid");
	twilio_bad("MessageSid=SM1&From=a%0Ab&To=%2B2", "From");
	twilio_bad("MessageSid=SM1&From=%2B1&To=%2B2&NumMedia=x", "NumMedia");
	twilio_bad("MessageSid=SM1&From=%2B1&To=%2B2&NumMedia=11", "NumMedia");
	twilio_bad("MessageSid=SM1&From=%2B1&To=%2B2&NumMedia=", "NumMedia");
	twilio_bad("MessageSid=SM1&From=%2B1&To=%2B2&NumMedia=2&"
	    "MediaUrl0=https%3A%2F%2Fm%2F1", "MediaUrl1");
	twilio_bad("MessageSid=SM1&From=%2B1&To=%2B2&NumMedia=1&"
	    "MediaUrl0=ftp%3A%2F%2Fm%2F1", "MediaUrl0");
}

static json_t *
wa_value(void)
{
	return json_pack("{s:{s:s, s:s}}", "metadata", "display_phone_number",
	    "1 555-078-3881", "phone_number_id", "106540352242922");
}

/* The document of one WhatsApp message, which must be read. */
static json_t *
wa(const char *msg)
{
	struct inbound_err	 e;
	json_t			*v = wa_value(), *m, *doc;

	m = json_loads(msg, 0, NULL);
	assert_non_null(m);
	doc = inbound_whatsapp(v, m, "messages[0]", NOW, &e);
	if (doc == NULL)
		fail_msg("%s: %s", e.path, e.why);
	assert_string_equal(str(doc, "channel"), "ott");
	assert_string_equal(str(doc, "provider"), "whatsapp");
	assert_string_equal(str(doc, "from"), "4915112345678");
	assert_string_equal(str(doc, "to"), "+15550783881");
	json_decref(m);
	json_decref(v);
	return doc;
}

static void
test_whatsapp(void **state)
{
	json_t	*doc;

	(void)state;
	doc = wa("{\"from\":\"4915112345678\",\"id\":\"wamid.A\","
	    "\"timestamp\":\"1795428100\",\"type\":\"text\","
	    "\"text\":{\"body\":\"Hello\"}}");
	assert_string_equal(str(doc, "providerMessageId"), "wamid.A");
	assert_string_equal(str(doc, "text"), "Hello");
	assert_string_equal(str(doc, "type"), "text");
	assert_string_equal(str(doc, "receivedAt"), "2026-11-23T10:01:40Z");
	assert_int_equal(json_array_size(json_object_get(doc, "media")), 0);
	json_decref(doc);
	doc = wa("{\"from\":\"4915112345678\",\"id\":\"w\",\"type\":"
	    "\"button\",\"button\":{\"payload\":\"p\",\"text\":\"Stop\"}}");
	assert_string_equal(str(doc, "text"), "Stop");
	/* No timestamp: when it came. */
	assert_string_equal(str(doc, "receivedAt"), "2026-11-23T10:00:00Z");
	json_decref(doc);
	doc = wa("{\"from\":\"4915112345678\",\"id\":\"w\",\"type\":"
	    "\"interactive\",\"interactive\":{\"type\":\"button_reply\","
	    "\"button_reply\":{\"id\":\"b1\",\"title\":\"Tuesday\"}}}");
	assert_string_equal(str(doc, "text"), "Tuesday");
	json_decref(doc);
	doc = wa("{\"from\":\"4915112345678\",\"id\":\"w\",\"type\":"
	    "\"interactive\",\"interactive\":{\"type\":\"list_reply\","
	    "\"list_reply\":{\"id\":\"r1\",\"title\":\"Large\"}}}");
	assert_string_equal(str(doc, "text"), "Large");
	json_decref(doc);
	doc = wa("{\"from\":\"4915112345678\",\"id\":\"w\",\"type\":\"image\","
	    "\"image\":{\"id\":\"1234\",\"caption\":\"cat\","
	    "\"mime_type\":\"image/jpeg\"}}");
	assert_string_equal(str(doc, "type"), "image");
	assert_true(json_is_null(json_object_get(doc, "text")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    doc, "media"), 0)), "1234");
	json_decref(doc);
	doc = wa("{\"from\":\"4915112345678\",\"id\":\"w\",\"type\":"
	    "\"location\",\"location\":{\"latitude\":1.5}}");
	assert_string_equal(str(doc, "type"), "location");
	assert_true(json_is_null(json_object_get(doc, "text")));
	assert_int_equal(json_array_size(json_object_get(doc, "media")), 0);
	json_decref(doc);
}

static void
wa_bad(json_t *value, const char *msg, const char *path)
{
	struct inbound_err	 e;
	json_t			*m = json_loads(msg, 0, NULL);

	assert_non_null(m);
	assert_null(inbound_whatsapp(value, m, "messages[3]", NOW, &e));
	assert_string_equal(e.path, path);
	json_decref(m);
	json_decref(value);
}

static void
test_whatsapp_bad(void **state)
{
	(void)state;
	wa_bad(wa_value(), "{\"id\":\"w\",\"type\":\"text\",\"text\":"
	    "{\"body\":\"x\"}}", "messages[3].from");
	wa_bad(wa_value(), "{\"from\":\"+4915\",\"id\":\"w\",\"type\":"
	    "\"text\",\"text\":{\"body\":\"x\"}}", "messages[3].from");
	wa_bad(wa_value(), "{\"from\":\"4915\",\"type\":\"text\"}",
	    "messages[3].id");
	wa_bad(wa_value(), "{\"from\":\"4915\",\"id\":\"w\"}",
	    "messages[3].type");
	wa_bad(wa_value(), "{\"from\":\"4915\",\"id\":\"w\",\"type\":"
	    "\"text\",\"text\":{}}", "messages[3].text.body");
	wa_bad(wa_value(), "{\"from\":\"4915\",\"id\":\"w\",\"type\":"
	    "\"button\",\"button\":{\"text\":5}}", "messages[3].button.text");
	wa_bad(json_pack("{s:{}}", "metadata"), "{\"from\":\"4915\",\"id\":"
	    "\"w\",\"type\":\"text\",\"text\":{\"body\":\"x\"}}",
	    "metadata.display_phone_number");
	wa_bad(json_pack("{s:{s:s}}", "metadata", "display_phone_number",
	    "call us"), "{\"from\":\"4915\",\"id\":\"w\",\"type\":\"text\","
	    "\"text\":{\"body\":\"x\"}}", "metadata.display_phone_number");
}

static json_t *
http_ok(const char *body, const char *channel)
{
	struct inbound_err	 e;
	json_t			*b = json_loads(body, 0, NULL), *doc;

	assert_non_null(b);
	assert_true(inbound_http_is(b));
	doc = inbound_http(b, channel, NOW, &e);
	if (doc == NULL)
		fail_msg("%s: %s", e.path, e.why);
	json_decref(b);
	return doc;
}

static void
http_bad(const char *body, const char *path)
{
	struct inbound_err	 e;
	json_t			*b = json_loads(body, 0, NULL);

	assert_non_null(b);
	assert_null(inbound_http(b, "sms", NOW, &e));
	assert_string_equal(e.path, path);
	json_decref(b);
}

static void
test_http(void **state)
{
	json_t	*doc, *b;

	(void)state;
	doc = http_ok("{\"type\":\"inbound\",\"from\":\"+4915112345678\","
	    "\"to\":\"+4930901820\",\"text\":\"Ja\",\"id\":\"in-1\","
	    "\"at\":\"2026-01-02T03:04:05Z\",\"other\":1}", "ott");
	assert_string_equal(str(doc, "channel"), "ott");
	assert_string_equal(str(doc, "provider"), "http");
	assert_string_equal(str(doc, "providerMessageId"), "in-1");
	assert_string_equal(str(doc, "text"), "Ja");
	assert_string_equal(str(doc, "receivedAt"), "2026-01-02T03:04:05Z");
	json_decref(doc);
	doc = http_ok("{\"type\":\"inbound\",\"from\":\"x\",\"to\":\"y\","
	    "\"text\":\"\",\"id\":null,\"at\":null}", "sms");
	assert_true(json_is_null(json_object_get(doc, "providerMessageId")));
	assert_string_equal(str(doc, "receivedAt"), "2026-11-23T10:00:00Z");
	json_decref(doc);
	/* A receipt is not an inbound message. */
	b = json_pack("{s:s, s:s}", "id", "x", "status", "delivered");
	assert_false(inbound_http_is(b));
	assert_false(inbound_http_is(NULL));
	json_decref(b);
	http_bad("{\"to\":\"y\",\"text\":\"t\"}", "from");
	http_bad("{\"from\":\"x\",\"text\":\"t\"}", "to");
	http_bad("{\"from\":\"x\",\"to\":\"y\"}", "text");
	http_bad("{\"from\":\"x\",\"to\":\"y\",\"text\":null}", "text");
	http_bad("{\"from\":\"x\",\"to\":\"y\",\"text\":\"t\",\"id\":7}", "id");
	http_bad("{\"from\":\"x\",\"to\":\"y\",\"text\":\"t\",\"at\":\"now\"}",
	    "at");
	http_bad("{\"from\":\"x\",\"to\":\"y\",\"text\":\"t\",\"at\":5}", "at");
	http_bad("{\"from\":\"x\\u0007\",\"to\":\"y\",\"text\":\"t\"}", "from");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_twilio),
		cmocka_unit_test(test_twilio_bad),
		cmocka_unit_test(test_whatsapp),
		cmocka_unit_test(test_whatsapp_bad),
		cmocka_unit_test(test_http),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
