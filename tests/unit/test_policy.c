/*
 * test_policy.c: the spooler's rules: which answers are retried, the
 * backoff and its jitter, Retry-After, max-age, which failures say an
 * address is gone for good.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <time.h>

#include "providers/policy.h"

static void
test_http_classes(void **state)
{
	static const long ok[] = { 200, 201, 202, 204, 299 };
	static const long temp[] = { 0, 100, 199, 408, 429, 500, 502, 503,
	    504, 599 };
	static const long perm[] = { 300, 301, 400, 401, 403, 404, 405, 409,
	    410, 413, 415, 422 };
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(policy_http(ok[i]), MSG_OK);
	for (i = 0; i < sizeof(temp) / sizeof(temp[0]); i++)
		assert_int_equal(policy_http(temp[i]), MSG_TEMPFAIL);
	for (i = 0; i < sizeof(perm) / sizeof(perm[0]); i++)
		assert_int_equal(policy_http(perm[i]), MSG_PERMFAIL);
}

/* Attempt n waits 60 s * 2^(n-2), capped at an hour, within +-20%. */
static void
test_backoff_bounds(void **state)
{
	long		attempt, base, d;
	unsigned	rnd;

	(void)state;
	for (attempt = 2; attempt < 40; attempt++) {
		base = 60L << (attempt - 2 < 10 ? attempt - 2 : 10);
		if (base > 3600)
			base = 3600;
		for (rnd = 0; rnd < 70000; rnd += 997) {
			d = policy_backoff(attempt, rnd);
			assert_true(d >= base * 8 / 10);
			assert_true(d <= base * 12 / 10);
		}
		/* The whole range is used: lowest and highest. */
		assert_int_equal(policy_backoff(attempt, 0), base * 8 / 10);
		assert_int_equal(policy_backoff(attempt,
		    (unsigned)(base * 4 / 10)), base * 12 / 10);
	}
	/* The first retry waits about a minute; the cap is reached. */
	assert_true(policy_backoff(2, 12345) >= 48 &&
	    policy_backoff(2, 12345) <= 72);
	assert_true(policy_backoff(1000, 1) >= 2880);
}

static void
test_retry_after(void **state)
{
	(void)state;
	assert_int_equal(policy_retry_after(0), 0);
	assert_int_equal(policy_retry_after(-5), 0);
	assert_int_equal(policy_retry_after(1), 1);
	assert_int_equal(policy_retry_after(120), 120);
	assert_int_equal(policy_retry_after(86400), 86400);
	assert_int_equal(policy_retry_after(86401), 86400);
	assert_int_equal(policy_retry_after(1LL << 40), 86400);
}

static void
test_max_age(void **state)
{
	const char	*why;
	time_t		 now = 1795428000;

	(void)state;
	assert_int_equal(policy_max_age(MSG_TEMPFAIL, now, now - 100, 3600,
	    &why), MSG_TEMPFAIL);
	assert_null(why);
	assert_int_equal(policy_max_age(MSG_TEMPFAIL, now, now - 3600, 3600,
	    &why), MSG_PERMFAIL);
	assert_string_equal(why, "older than max-age");
	/* Only a temporary failure can run out of time. */
	assert_int_equal(policy_max_age(MSG_OK, now, now - 99999, 3600,
	    &why), MSG_OK);
	assert_null(why);
	assert_int_equal(policy_max_age(MSG_PERMFAIL, now, now, 3600, &why),
	    MSG_PERMFAIL);
	assert_null(why);
	/* Scheduled in the future: not yet counting. */
	assert_int_equal(policy_max_age(MSG_TEMPFAIL, now, now + 500, 60,
	    &why), MSG_TEMPFAIL);
}

/* The default schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
static void
test_webhook_schedule(void **state)
{
	static const long want[] = { 5, 300, 1800, 7200, 18000, 36000,
	    36000 };
	long	s[POLICY_WEBHOOK_TRIES_MAX];
	size_t	n, i;

	(void)state;
	n = policy_schedule_parse(POLICY_WEBHOOK_SCHEDULE, s,
	    POLICY_WEBHOOK_TRIES_MAX);
	assert_int_equal(n, 7);
	for (i = 0; i < n; i++)
		assert_int_equal(s[i], want[i]);
	assert_int_equal(policy_schedule_parse("1,2", s, 8), 2);
	assert_int_equal(policy_schedule_parse("1", s, 8), 1);
	/* Not a schedule: empty, blanks, zero, signs, too long, a day+. */
	assert_int_equal(policy_schedule_parse("", s, 8), 0);
	assert_int_equal(policy_schedule_parse(NULL, s, 8), 0);
	assert_int_equal(policy_schedule_parse("1,,2", s, 8), 0);
	assert_int_equal(policy_schedule_parse("1,", s, 8), 0);
	assert_int_equal(policy_schedule_parse("0", s, 8), 0);
	assert_int_equal(policy_schedule_parse("-1", s, 8), 0);
	assert_int_equal(policy_schedule_parse(" 1", s, 8), 0);
	assert_int_equal(policy_schedule_parse("1s", s, 8), 0);
	assert_int_equal(policy_schedule_parse("86401", s, 8), 0);
	assert_int_equal(policy_schedule_parse("1,2,3", s, 2), 0);
}

static void
test_webhook_http(void **state)
{
	(void)state;
	assert_int_equal(policy_webhook_http(200), MSG_OK);
	assert_int_equal(policy_webhook_http(204), MSG_OK);
	assert_int_equal(policy_webhook_http(299), MSG_OK);
	assert_int_equal(policy_webhook_http(410), MSG_PERMFAIL);
	/* Everything else is retried, 4xx included: the client may fix it. */
	assert_int_equal(policy_webhook_http(0), MSG_TEMPFAIL);
	assert_int_equal(policy_webhook_http(301), MSG_TEMPFAIL);
	assert_int_equal(policy_webhook_http(400), MSG_TEMPFAIL);
	assert_int_equal(policy_webhook_http(404), MSG_TEMPFAIL);
	assert_int_equal(policy_webhook_http(429), MSG_TEMPFAIL);
	assert_int_equal(policy_webhook_http(500), MSG_TEMPFAIL);
}

/* Each wait within +-20% of the schedule's; Retry-After when longer. */
static void
test_webhook_delay(void **state)
{
	long		s[POLICY_WEBHOOK_TRIES_MAX], d;
	size_t		n, i;
	unsigned	rnd;

	(void)state;
	n = policy_schedule_parse(POLICY_WEBHOOK_SCHEDULE, s,
	    POLICY_WEBHOOK_TRIES_MAX);
	for (i = 0; i < n; i++) {
		for (rnd = 0; rnd < 70000; rnd += 331) {
			d = policy_webhook_delay((long)i + 1, rnd, 0, s, n);
			assert_true(d >= s[i] * 8 / 10);
			assert_true(d <= s[i] * 12 / 10);
		}
		assert_int_equal(policy_webhook_delay((long)i + 1, 0, 0, s,
		    n), s[i] * 8 / 10);
	}
	/* Exhausted after the last wait; nonsense counts too. */
	assert_int_equal(policy_webhook_delay((long)n + 1, 7, 0, s, n), -1);
	assert_int_equal(policy_webhook_delay(0, 7, 0, s, n), -1);
	/* Retry-After wins when longer, bounded to a day. */
	assert_int_equal(policy_webhook_delay(1, 0, 120, s, n), 120);
	assert_int_equal(policy_webhook_delay(2, 0, 1, s, n), 240);
	assert_int_equal(policy_webhook_delay(1, 0, 999999, s, n), 86400);
	/* A one-second schedule never waits less than a second. */
	s[0] = 1;
	assert_int_equal(policy_webhook_delay(1, 0, 0, s, 1), 1);
}

/* A due second is never early: the wait is rounded up to a whole one. */
static void
test_not_before(void **state)
{
	struct timespec	at = { 1000, 0 };

	(void)state;
	assert_int_equal(policy_not_before(&at, 3), 1003);
	at.tv_nsec = 1;
	assert_int_equal(policy_not_before(&at, 3), 1004);
	at.tv_nsec = 999999999;
	assert_int_equal(policy_not_before(&at, 0), 1001);
}

/*
 * Start what policy_webhook_next lets start, at most max: the clients
 * in the order they went into order[] (busy and due moved), the count.
 */
static size_t
start_all(struct policy_webhook_client *c, size_t n, size_t cap,
    size_t *turn, size_t *order, size_t max)
{
	size_t	i, k = 0;

	while (k < max && (i = policy_webhook_next(c, n, cap, turn)) < n) {
		assert_true(c[i].due > 0);
		c[i].due--;
		c[i].busy++;
		order[k++] = i;
	}
	return k;
}

/* A client alone, and one beside an idle one: a transfer kept for it. */
static void
test_webhook_share_alone(void **state)
{
	struct policy_webhook_client	c[2] = { { 0, 20, 1 }, { 0, 0, 0 } };
	size_t				order[8], turn = 0;

	(void)state;
	/* The only client with a webhook-url: all 4. */
	assert_int_equal(start_all(c, 2, 4, &turn, order, 8), 4);
	assert_int_equal(c[0].busy, 4);
	/* The other has one too: it keeps one free for that one. */
	c[0].busy = 0;
	c[1].wants = 1;
	assert_int_equal(start_all(c, 2, 4, &turn, order, 8), 3);
	assert_int_equal(c[0].busy, 3);
	/* Which it gets at once, though the first three hang. */
	c[1].due = 5;
	assert_int_equal(policy_webhook_next(c, 2, 4, &turn), 1);
	c[1].due--;
	c[1].busy++;
	assert_int_equal(policy_webhook_next(c, 2, 4, &turn), 2);
	/* One of the first ends: the share is 2 each now, the other's. */
	c[0].busy--;
	assert_int_equal(policy_webhook_next(c, 2, 4, &turn), 1);
	c[1].due--;
	c[1].busy++;
	/* And the first back to its share when another ends. */
	c[0].busy--;
	assert_int_equal(policy_webhook_next(c, 2, 4, &turn), 0);
	c[0].busy++;
	assert_int_equal(policy_webhook_next(c, 2, 4, &turn), 2);
	/* Nothing due, or nobody: none. */
	c[0].due = c[1].due = 0;
	assert_int_equal(policy_webhook_next(c, 2, 4, &turn), 2);
	assert_int_equal(policy_webhook_next(c, 0, 4, &turn), 0);
}

/* Clients with events due take turns, each to its share. */
static void
test_webhook_share_turns(void **state)
{
	struct policy_webhook_client	c[3] = { { 0, 9, 1 }, { 0, 9, 1 },
					    { 0, 1, 1 } };
	size_t				order[16], turn = 1;

	(void)state;
	assert_int_equal(start_all(c, 3, 8, &turn, order, 16), 5);
	/* From the turn on: 1, 2, 0, then the two with more, in turn. */
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 0);
	assert_int_equal(order[3], 1);
	assert_int_equal(order[4], 0);
	/* 8 / 3: two each at most while the third's is under way. */
	assert_int_equal(c[0].busy, 2);
	assert_int_equal(c[1].busy, 2);
	/* It ends: 8 / 2, less the one kept for the third. */
	c[2].busy = 0;
	assert_int_equal(start_all(c, 3, 8, &turn, order, 16), 3);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 0);
	assert_int_equal(order[2], 1);
	assert_int_equal(c[0].busy, 3);
	assert_int_equal(c[1].busy, 4);
}

/* More clients than transfers: one each; a turn goes round. */
static void
test_webhook_share_crowded(void **state)
{
	struct policy_webhook_client	c[6];
	size_t				order[8], turn = 0, i;

	(void)state;
	for (i = 0; i < 6; i++)
		c[i] = (struct policy_webhook_client){ 0, 0, 1 };
	c[0].due = 10;
	assert_int_equal(start_all(c, 6, 4, &turn, order, 8), 1);
	for (i = 1; i < 6; i++)
		c[i].due = 3;
	assert_int_equal(start_all(c, 6, 4, &turn, order, 8), 3);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[2], 3);
	/* The turn goes on from where it stopped: 4 and 5 next. */
	c[1].busy = c[2].busy = 0;
	assert_int_equal(start_all(c, 6, 4, &turn, order, 8), 2);
	assert_int_equal(order[0], 4);
	assert_int_equal(order[1], 5);
	/* One with no webhook-url now counts while under way, not after. */
	c[5].wants = 0;
	assert_int_equal(policy_webhook_next(c, 6, 4, &turn), 6);
	for (i = 0; i < 6; i++)
		c[i] = (struct policy_webhook_client){ 0, i == 1 ? 5 : 0,
		    i < 2 };
	/* 1 has events, 0 is the other with a webhook-url: 3 for 1. */
	assert_int_equal(start_all(c, 6, 4, &turn, order, 8), 3);
	assert_int_equal(c[1].busy, 3);
}

/* RFC 3463 statuses: 5.x.x of the address, not the sender's, size ... */
static void
test_email_unreachable(void **state)
{
	static const char *const yes[] = { "5.1.1", "5.1.2", "5.1.3",
	    "5.1.6", "5.1.10", "5.0.0", "5.2.1", "5.2.2", "5.3.0", "5.4.4",
	    " 5.1.1", "5.1.1 (user unknown)", "5.1.1\tx", "5.999.999" };
	static const char *const no[] = { "4.1.1", "4.2.2", "4.4.7", "4.0.0",
	    "2.0.0", "5.1.7", "5.1.8", "5.2.3", "5.3.4", "5.4.7", "5.5.0",
	    "5.5.2", "5.6.0", "5.7.0", "5.7.1", "5.7.26", "", "5", "5.",
	    "5.1", "5.1.", "5.1.1.1", "5.1.1x", "5.1111.1", "5.1.1111",
	    "6.1.1", "x5.1.1", "5..1", "failed" };
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!policy_email_unreachable(yes[i], 0))
			fail_msg("%s should be the address's", yes[i]);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (policy_email_unreachable(no[i], 0))
			fail_msg("%s should not be the address's", no[i]);
	/* A reply without an enhanced code: its class stands for it. */
	assert_true(policy_email_unreachable(NULL, 550));
	assert_true(policy_email_unreachable("no such user", 553));
	assert_false(policy_email_unreachable(NULL, 450));
	assert_false(policy_email_unreachable(NULL, 250));
	assert_false(policy_email_unreachable(NULL, 0));
	/* An enhanced code wins over the reply's class. */
	assert_false(policy_email_unreachable("5.7.1", 550));
	assert_false(policy_email_unreachable("4.1.1", 550));
}

static int
outcome(const char *channel, enum msg_status st, const char *reply,
    char *why, size_t len)
{
	json_t	*r = json_loads(reply, 0, NULL);
	int	 ch;

	assert_non_null(r);
	why[0] = '\0';
	ch = policy_unreachable(channel, st, r, "the error", why, len);
	json_decref(r);
	return ch;
}

static void
test_unreachable_smtp(void **state)
{
	char	why[128];

	(void)state;
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":550,\"reply\":\"550 5.1.1 no such user\","
	    "\"command\":\"RCPT TO\"}", why, sizeof(why)), CHANNEL_EMAIL);
	assert_string_equal(why, "the error");
	/* Multi-line replies' last line, and none with an enhanced code. */
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":550,\"reply\":\"550-5.1.1 gone\","
	    "\"command\":\"RCPT TO\"}", why, sizeof(why)), CHANNEL_EMAIL);
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":550,\"reply\":\"550 No such user here\","
	    "\"command\":\"RCPT TO\"}", why, sizeof(why)), CHANNEL_EMAIL);
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":554,\"command\":\"RCPT TO\"}", why,
	    sizeof(why)), CHANNEL_EMAIL);
	/* Relay denied, a temporary failure, another command: no. */
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":554,\"reply\":\"554 5.7.1 <a@b.example>: "
	    "Relay access denied\",\"command\":\"RCPT TO\"}", why,
	    sizeof(why)), -1);
	assert_int_equal(outcome("email", MSG_TEMPFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":450,\"reply\":\"450 4.2.0 busy\","
	    "\"command\":\"RCPT TO\"}", why, sizeof(why)), -1);
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":550,\"reply\":\"550 4.1.1 odd\","
	    "\"command\":\"RCPT TO\"}", why, sizeof(why)), -1);
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":554,\"reply\":\"554 5.6.0 rejected\","
	    "\"command\":\"DATA\"}", why, sizeof(why)), -1);
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":550,\"reply\":\"550 5.1.8 bad sender\","
	    "\"command\":\"MAIL FROM\"}", why, sizeof(why)), -1);
	assert_int_equal(outcome("email", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":550,\"reply\":\"550 5.1.1 no such user\"}",
	    why, sizeof(why)), -1);
	/* A message of another channel, or no reply at all. */
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"smtp\",\"code\":550,\"reply\":\"550 5.1.1 no such user\","
	    "\"command\":\"RCPT TO\"}", why, sizeof(why)), -1);
	assert_int_equal(policy_unreachable("email", MSG_PERMFAIL, NULL,
	    "x", why, sizeof(why)), -1);
	assert_int_equal(policy_unreachable(NULL, MSG_PERMFAIL, NULL,
	    "x", why, sizeof(why)), -1);
}

static void
test_unreachable_twilio_smpp(void **state)
{
	char	why[128];

	(void)state;
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21610,\"status\":400}", why, sizeof(why)),
	    CHANNEL_SMS);
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21211}", why, sizeof(why)), CHANNEL_SMS);
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21614}", why, sizeof(why)), CHANNEL_SMS);
	/* A call to a number that is none; opt-out and mobile are SMS's. */
	assert_int_equal(outcome("voice", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21211}", why, sizeof(why)), CHANNEL_VOICE);
	assert_int_equal(outcome("voice", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21610}", why, sizeof(why)), -1);
	assert_int_equal(outcome("voice", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21614}", why, sizeof(why)), -1);
	/* Other codes, a string code, a temporary failure. */
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21408}", why, sizeof(why)), -1);
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":\"21610\"}", why, sizeof(why)), -1);
	assert_int_equal(outcome("sms", MSG_TEMPFAIL, "{\"provider\":"
	    "\"twilio\",\"code\":21610}", why, sizeof(why)), -1);
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"code\":21610}",
	    why, sizeof(why)), -1);
	/* ESME_RINVDSTADR, and nothing else of an SMSC's. */
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"smpp\",\"parts\":1,\"commandStatus\":11}", why, sizeof(why)),
	    CHANNEL_SMS);
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"smpp\",\"parts\":1,\"commandStatus\":69}", why, sizeof(why)),
	    -1);
	assert_int_equal(outcome("sms", MSG_TEMPFAIL, "{\"provider\":"
	    "\"smpp\",\"parts\":1,\"commandStatus\":11}", why, sizeof(why)),
	    -1);
	/* Others' codes that look alike say nothing. */
	assert_int_equal(outcome("sms", MSG_PERMFAIL, "{\"provider\":"
	    "\"http\",\"code\":21610}", why, sizeof(why)), -1);
	assert_int_equal(outcome("ott", MSG_PERMFAIL, "{\"provider\":"
	    "\"whatsapp\",\"code\":21211}", why, sizeof(why)), -1);
}

static int
receipt(const char *channel, const char *r, char *why, size_t len)
{
	json_t	*doc = json_loads(r, 0, NULL);
	int	 ch;

	assert_non_null(doc);
	why[0] = '\0';
	ch = policy_receipt_unreachable(channel, doc, why, len);
	json_decref(doc);
	return ch;
}

static void
test_unreachable_receipts(void **state)
{
	char	why[128];

	(void)state;
	/* A bounce (msgspool-bounce): failed with a 5.x.x of the address. */
	assert_int_equal(receipt("email", "{\"provider\":\"email\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"failed\","
	    "\"error\":{\"code\":\"5.1.1\",\"message\":\"550 5.1.1 gone\"}}",
	    why, sizeof(why)), CHANNEL_EMAIL);
	assert_string_equal(why, "bounce 5.1.1: 550 5.1.1 gone");
	assert_int_equal(receipt("email", "{\"provider\":\"email\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"Failed\","
	    "\"error\":{\"code\":\"5.0.0\",\"message\":\"550 unknown\"}}",
	    why, sizeof(why)), CHANNEL_EMAIL);
	/* Given up after temporary failures, delayed, 5.7.1, no code. */
	assert_int_equal(receipt("email", "{\"provider\":\"email\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"failed\","
	    "\"error\":{\"code\":\"4.4.1\",\"message\":\"timed out\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("email", "{\"provider\":\"email\","
	    "\"status\":\"delayed\",\"providerStatus\":\"delayed\","
	    "\"error\":{\"code\":\"4.4.1\",\"message\":\"timed out\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("email", "{\"provider\":\"email\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"failed\","
	    "\"error\":{\"code\":\"5.7.1\",\"message\":\"spam\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("email", "{\"provider\":\"email\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"failed\","
	    "\"error\":{\"code\":null,\"message\":\"bounced\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("email", "{\"provider\":\"email\","
	    "\"status\":\"delivered\",\"providerStatus\":\"delivered\","
	    "\"error\":null}", why, sizeof(why)), -1);
	assert_int_equal(receipt("sms", "{\"provider\":\"email\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"failed\","
	    "\"error\":{\"code\":\"5.1.1\",\"message\":\"x\"}}",
	    why, sizeof(why)), -1);
	/* Twilio's status callback with its ErrorCode. */
	assert_int_equal(receipt("sms", "{\"provider\":\"twilio\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"failed\","
	    "\"error\":{\"code\":\"21610\",\"message\":\"unsubscribed\"}}",
	    why, sizeof(why)), CHANNEL_SMS);
	assert_string_equal(why, "Twilio error 21610: unsubscribed");
	assert_int_equal(receipt("voice", "{\"provider\":\"twilio\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"failed\","
	    "\"error\":{\"code\":\"21211\",\"message\":\"invalid\"}}",
	    why, sizeof(why)), CHANNEL_VOICE);
	assert_int_equal(receipt("sms", "{\"provider\":\"twilio\","
	    "\"status\":\"undelivered\",\"providerStatus\":\"undelivered\","
	    "\"error\":{\"code\":\"30003\",\"message\":\"unreachable\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("sms", "{\"provider\":\"twilio\","
	    "\"status\":\"undelivered\",\"error\":{\"code\":\"21610x\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("sms", "{\"provider\":\"twilio\","
	    "\"status\":\"undelivered\",\"error\":{\"code\":\"\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("sms", "{\"provider\":\"twilio\","
	    "\"status\":\"delivered\",\"error\":{\"code\":\"21610\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("sms", "{\"provider\":\"whatsapp\","
	    "\"status\":\"undelivered\",\"error\":{\"code\":\"21610\"}}",
	    why, sizeof(why)), -1);
	assert_int_equal(receipt("sms", "{}", why, sizeof(why)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_classes),
		cmocka_unit_test(test_email_unreachable),
		cmocka_unit_test(test_unreachable_smtp),
		cmocka_unit_test(test_unreachable_twilio_smpp),
		cmocka_unit_test(test_unreachable_receipts),
		cmocka_unit_test(test_backoff_bounds),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_not_before),
		cmocka_unit_test(test_max_age),
		cmocka_unit_test(test_webhook_schedule),
		cmocka_unit_test(test_webhook_http),
		cmocka_unit_test(test_webhook_delay),
		cmocka_unit_test(test_webhook_share_alone),
		cmocka_unit_test(test_webhook_share_turns),
		cmocka_unit_test(test_webhook_share_crowded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
