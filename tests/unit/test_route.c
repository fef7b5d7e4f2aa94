/*
 * test_route.c: the routes of a channel (lib/content/route.c): the
 * longest prefix, the first route without one, no-route, email by
 * domain, the order of fallbacks, and each config error with its line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/config.h"
#include "content/route.h"

static struct config *
parse(const char *text)
{
	char		 err[256];
	struct config	*c;

	c = config_parse("/etc/msgspool/msgspool.conf", text, strlen(text),
	    err, sizeof(err));
	if (c == NULL)
		fail_msg("config_parse: %s", err);
	return c;
}

static const char *
pick(const struct route_table *t, const char *ch, const char *to)
{
	const struct route_conf	*r = route_pick(t, ch, to);

	return r ? r->section : "(no-route)";
}

static void
test_prefixes(void **state)
{
	struct config		*c;
	struct route_table	*t;
	char			 err[256];

	(void)state;
	c = parse("[sms]\nprovider = twilio\n"
	    "[route.de]\nchannel = sms\nprovider = http\nprefix = +49\n"
	    "[route.de-mobile]\nchannel = sms\nprovider = http\n"
	    "prefix = +4915 +4916\n"
	    "[route.spare]\nchannel = sms\nprovider = file\n");
	assert_non_null(t = route_table_new(c, err, sizeof(err)));
	assert_string_equal(pick(t, "sms", "+4915112345678"),
	    "route.de-mobile");
	assert_string_equal(pick(t, "sms", "+4930123456"), "route.de");
	/* No prefix claims it: the first route without one, [sms]. */
	assert_string_equal(pick(t, "sms", "+33612345678"), "sms");
	/* Nothing configures voice or email: their own section. */
	assert_string_equal(pick(t, "voice", "+33612345678"), "voice");
	assert_string_equal(pick(t, "email", "a@b.example"), "email");
	/* ott.1 has no section and no route: none. */
	assert_string_equal(pick(t, "ott.1", "4915112345678"), "(no-route)");
	route_table_free(t);
	config_free(c);

	/* Only prefixed routes: a number none takes has no route. */
	c = parse("[sms]\nprovider = http\nprefix = +49\n");
	assert_non_null(t = route_table_new(c, err, sizeof(err)));
	assert_string_equal(pick(t, "sms", "+4915112345678"), "sms");
	assert_string_equal(pick(t, "sms", "+33612345678"), "(no-route)");
	route_table_free(t);
	config_free(c);
}

static void
test_email_domains(void **state)
{
	struct config		*c;
	struct route_table	*t;
	char			 err[256];

	(void)state;
	c = parse("[email]\nprovider = smtp\n"
	    "[route.corp]\nchannel = email\nprovider = smtp\n"
	    "prefix = @Example.COM\n");
	assert_non_null(t = route_table_new(c, err, sizeof(err)));
	assert_string_equal(pick(t, "email", "ann@example.com"), "route.corp");
	assert_string_equal(pick(t, "email", "ann@EXAMPLE.com"), "route.corp");
	assert_string_equal(pick(t, "email", "ann@mail.example.com"),
	    "route.corp");
	assert_string_equal(pick(t, "email", "ann@notexample.com"), "email");
	route_table_free(t);
	config_free(c);
}

static void
test_order(void **state)
{
	struct config		*c;
	struct route_table	*t;
	const struct route_conf	*o[ROUTE_TRY_MAX];
	char			 err[256];
	size_t			 n;

	(void)state;
	c = parse("[sms]\nprovider = twilio\nfallback = b c\nbreaker = 3\n"
	    "breaker-time = 2min\n"
	    "[route.b]\nchannel = sms\nprovider = http\nfallback = d\n"
	    "[route.c]\nchannel = sms\nprovider = http\nfallback = d\n"
	    "[route.d]\nchannel = sms\nprovider = file\n");
	if ((t = route_table_new(c, err, sizeof(err))) == NULL)
		fail_msg("%s", err);
	n = route_order(t, route_find(t, "sms"), o, ROUTE_TRY_MAX);
	assert_int_equal(n, 4);
	assert_string_equal(o[0]->name, "sms");
	assert_string_equal(o[1]->name, "b");
	assert_string_equal(o[1]->section, "route.b");
	assert_string_equal(o[2]->name, "d");
	assert_string_equal(o[3]->name, "c");
	assert_int_equal(route_find(t, "sms")->breaker, 3);
	assert_int_equal(route_find(t, "sms")->breaker_time, 120);
	assert_int_equal(route_find(t, "b")->breaker,
	    ROUTE_BREAKER_DEFAULT);
	assert_int_equal(route_find(t, "route.b")->breaker_time,
	    ROUTE_BREAKER_TIME_DEFAULT);
	route_table_free(t);
	config_free(c);
}

static void
test_errors(void **state)
{
	static const struct {
		const char	*text;
		const char	*err;
	} cases[] = {
		{ "[sms]\nfallback = nope\n",
		    "[sms] fallback: no route 'nope'" },
		{ "[sms]\nfallback = a\n[route.a]\nchannel = sms\n"
		    "fallback = b\n[route.b]\nchannel = sms\nfallback = a\n",
		    "[route.a] fallback: a circle (its fallbacks lead back to "
		    "it)" },
		{ "[sms]\nfallback = sms\n",
		    "[sms] fallback: a route is not its own fallback" },
		{ "[sms]\nfallback = a\n[route.a]\nchannel = sms\n"
		    "fallback = sms\n",
		    "[sms] fallback: a circle (its fallbacks lead back to it)" },
		{ "[sms]\nfallback = voice\n[voice]\n",
		    "[sms] fallback: 'voice' is a route of voice, not sms" },
		{ "[route.x]\nprovider = http\n",
		    "[route.x] channel: missing (sms, voice, email or ott.N)" },
		{ "[route.x]\nchannel = fax\n",
		    "[route.x] channel: not sms, voice, email or ott.N" },
		{ "[sms]\nprefix = +49x\n",
		    "[sms] prefix: '+49x' is not leading digits of a number "
		    "(+49)" },
		{ "[email]\nprefix = example.com\n",
		    "[email] prefix: 'example.com' is not @ and a domain" },
		{ "[sms]\nprefix = +49\n[route.a]\nchannel = sms\nprefix = 49\n",
		    "[route.a] prefix: '49' is [sms]'s too" },
		{ "[sms]\nbreaker = 0\n",
		    "[sms] breaker: '0' is not a whole number of at least 1" },
		{ "[sms]\nbreaker-time = soon\n",
		    "[sms] breaker-time: 'soon' is not a duration (30, 30s, "
		    "2min, 1h)" },
	};
	struct config		*c;
	struct route_table	*t;
	char			 err[256];
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = parse(cases[i].text);
		err[0] = '\0';
		t = route_table_new(c, err, sizeof(err));
		if (t != NULL)
			fail_msg("case %zu taken", i);
		assert_string_equal(err, cases[i].err);
		config_free(c);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_email_domains),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
