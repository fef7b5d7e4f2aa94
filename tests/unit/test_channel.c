/*
 * test_channel.c: the table of channels, and the sections that route
 * them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <jansson.h>

#include "base/channel.h"
#include "content/keys.h"

static void
test_table(void **state)
{
	unsigned	seen = 0;
	int		c;

	(void)state;
	for (c = 0; c < CHANNEL__MAX; c++) {
		const struct channel_info *ci = channel_info((enum channel)c);

		assert_non_null(ci);
		assert_int_equal(channel_parse(ci->name), c);
		assert_string_equal(channel_scope_name(ci->scope), ci->name);
		/* One bit each, all of them together SCOPE_ALL. */
		assert_int_equal(ci->scope & seen, 0);
		seen |= ci->scope;
	}
	assert_int_equal(seen, SCOPE_ALL);
	assert_null(channel_info(CHANNEL__MAX));
	assert_int_equal(channel_parse("fax"), -1);
	assert_int_equal(channel_parse(NULL), -1);
	assert_string_equal(channel_scope_name(SCOPE_ALL), "?");
	/* The two scopes that are no channel's, outside SCOPE_ALL. */
	assert_string_equal(channel_scope_name(SCOPE_METRICS), "metrics");
	assert_string_equal(channel_scope_name(SCOPE_ADMIN), "admin");
	assert_int_equal(SCOPE_METRICS & SCOPE_ALL, 0);
	assert_int_equal(SCOPE_ADMIN & SCOPE_ALL, 0);
	assert_int_equal(SCOPE_ADMIN & SCOPE_METRICS, 0);
	assert_string_equal(channel_scope_name(SCOPE_ADMIN | SCOPE_METRICS),
	    "?");
	assert_string_equal(channel_info(CHANNEL_SMS)->idkey, "smsId");
	assert_string_equal(channel_info(CHANNEL_VOICE)->idkey, "callId");
}

static void
test_of_section(void **state)
{
	(void)state;
	assert_int_equal(channel_of_section("sms"), CHANNEL_SMS);
	assert_int_equal(channel_of_section("voice"), CHANNEL_VOICE);
	assert_int_equal(channel_of_section("email"), CHANNEL_EMAIL);
	assert_int_equal(channel_of_section("ott.1"), CHANNEL_OTT);
	assert_int_equal(channel_of_section("ott.123"), CHANNEL_OTT);
	assert_int_equal(channel_of_section("ott"), -1);
	assert_int_equal(channel_of_section("ott."), -1);
	assert_int_equal(channel_of_section("ott.1a"), -1);
	assert_int_equal(channel_of_section("ott.-1"), -1);
	assert_int_equal(channel_of_section("sms.1"), -1);
	assert_int_equal(channel_of_section("smsx"), -1);
	assert_int_equal(channel_of_section("client.acme"), -1);
	assert_int_equal(channel_of_section(""), -1);
}

static void
test_section_of_document(void **state)
{
	char	 buf[64];
	json_t	*doc;

	(void)state;
	doc = json_pack("{s:s, s:{s:s}}", "channel", "sms", "message", "to",
	    "+4915112345678");
	assert_string_equal(channel_section(doc, buf, sizeof(buf)), "sms");
	json_decref(doc);
	doc = json_pack("{s:s, s:{s:i}}", "channel", "ott", "message",
	    "channelType", 3);
	assert_string_equal(channel_section(doc, buf, sizeof(buf)), "ott.3");
	json_decref(doc);
	/* A numbered channel without its number routes nowhere. */
	doc = json_pack("{s:s, s:{}}", "channel", "ott", "message");
	assert_null(channel_section(doc, buf, sizeof(buf)));
	json_decref(doc);
	doc = json_pack("{s:s}", "channel", "pigeon");
	assert_null(channel_section(doc, buf, sizeof(buf)));
	json_decref(doc);
	doc = json_object();
	assert_null(channel_section(doc, buf, sizeof(buf)));
	json_decref(doc);
	assert_null(channel_numbered_section(CHANNEL_SMS, 1, buf,
	    sizeof(buf)));
	assert_string_equal(channel_numbered_section(CHANNEL_OTT, 7, buf,
	    sizeof(buf)), "ott.7");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_of_section),
		cmocka_unit_test(test_section_of_document),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
