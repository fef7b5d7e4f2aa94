/*
 * test_claimkeep.c: the claim keeper of a shared spool (claimkeep.h),
 * on a scratch spool of this host: claims as many as asked for, none of
 * a route at its cap (those stay in new/), each claimed message's
 * recipient looked up in the suppressions, and housekeeping run on its
 * own thread, one run at a time, collected once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/msgspool.h"
#include "daemon/claimkeep.h"
#include "spool/msgdoc.h"
#include "spool/spool.h"
#include "spool/suppress.h"
#include "testutil.h"

/* The route of a message in these tests: its channel. */
static const char *
route(const json_t *doc, char *buf, size_t len)
{
	const char	*ch = json_string_value(json_object_get(doc, "channel"));

	if (ch == NULL)
		return NULL;
	snprintf(buf, len, "%s", ch);
	return buf;
}

static void
enqueue(struct tu_spool *f, const char *channel)
{
	char	 id[SPOOL_ID_LEN + 1];
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, channel, "acme", 0, json_pack("{s:s,s:s}", "to",
	    "+4915112345678", "body", "x"));
	assert_non_null(doc);
	assert_int_equal(spool_enqueue(f->sp, doc, SPOOL_NEW), MSG_OK);
	json_decref(doc);
}

static size_t
count(struct tu_spool *f, enum spool_dir d)
{
	char	**names = NULL;
	ssize_t	  n;

	n = spool_list(f->sp, d, &names);
	assert_true(n >= 0);
	spool_names_free(names, (size_t)n);
	return (size_t)n;
}

/*
 * Take what the keeper claims until want are taken or, with want 0,
 * for a second; each one's channel counted in the two counters.
 */
static size_t
take(struct keeper *k, size_t want, size_t *sms, size_t *voice)
{
	struct pollfd	 p = { keeper_fd(k), POLLIN, 0 };
	struct claimed	*c;
	time_t		 end = time(NULL) + (want > 0 ? 10 : 2);
	size_t		 n = 0;
	const char	*ch;

	while (time(NULL) < end && (want == 0 || n < want)) {
		while ((c = keeper_take(k)) != NULL) {
			ch = json_string_value(json_object_get(c->doc,
			    "channel"));
			if (strcmp(ch, "sms") == 0)
				(*sms)++;
			else
				(*voice)++;
			n++;
			keeper_release(c->kept);
			json_decref(c->doc);
			json_decref(c->sup);
			free(c);
		}
		(void)poll(&p, 1, 100);
	}
	return n;
}

static void
test_claims_as_many_as_asked(void **state)
{
	struct tu_spool	*f = *state;
	struct keeper	*k;
	char		 err[256];
	size_t		 sms = 0, voice = 0;
	int		 i;

	for (i = 0; i < 5; i++)
		enqueue(f, "sms");
	k = keeper_new(f->dir, route, err, sizeof(err));
	assert_non_null(k);
	keeper_want(k, 3, 1, NULL, 0);
	assert_int_equal(take(k, 3, &sms, &voice), 3);
	/* No more than asked for: the others wait in new/. */
	keeper_want(k, 0, 0, NULL, 0);
	assert_int_equal(take(k, 0, &sms, &voice), 0);
	assert_int_equal(sms, 3);
	assert_int_equal(count(f, SPOOL_NEW), 2);
	assert_int_equal(count(f, SPOOL_CUR), 3);
	keeper_free(k);
}

static void
test_full_route_left_in_new(void **state)
{
	static const char *const full[] = { "email", "sms" };
	struct tu_spool	*f = *state;
	struct keeper	*k;
	char		 err[256];
	size_t		 sms = 0, voice = 0;
	int		 i;

	for (i = 0; i < 4; i++)
		enqueue(f, "sms");
	enqueue(f, "voice");
	enqueue(f, "voice");
	k = keeper_new(f->dir, route, err, sizeof(err));
	assert_non_null(k);
	keeper_want(k, 6, 1, full, 2);
	assert_int_equal(take(k, 0, &sms, &voice), 2);
	assert_int_equal(voice, 2);
	assert_int_equal(sms, 0);
	assert_int_equal(count(f, SPOOL_NEW), 4);
	/* Room again on the route: its messages are claimed. */
	keeper_want(k, 4, 1, full, 1);
	assert_int_equal(take(k, 4, &sms, &voice), 4);
	assert_int_equal(sms, 4);
	assert_int_equal(count(f, SPOOL_NEW), 0);
	keeper_free(k);
}

/*
 * The claiming thread looks each claimed message's recipient up in the
 * suppressions, so that the loop makes no call on the spool for it.
 */
static void
test_suppression_looked_up(void **state)
{
	struct tu_spool	*f = *state;
	struct pollfd	 p;
	struct keeper	*k;
	struct claimed	*c;
	const char	*ch;
	char		 err[256];
	time_t		 end = time(NULL) + 10;
	size_t		 n = 0;

	enqueue(f, "sms");
	enqueue(f, "voice");
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
	    "+4915112345678", "stop", NULL, NULL), 1);
	k = keeper_new(f->dir, route, err, sizeof(err));
	assert_non_null(k);
	p.fd = keeper_fd(k);
	p.events = POLLIN;
	keeper_want(k, 2, 1, NULL, 0);
	while (n < 2 && time(NULL) < end) {
		while ((c = keeper_take(k)) != NULL) {
			ch = json_string_value(json_object_get(c->doc,
			    "channel"));
			if (strcmp(ch, "sms") == 0) {
				assert_non_null(c->sup);
				assert_string_equal(json_string_value(
				    json_object_get(c->sup, "source")), "stop");
			} else {
				assert_null(c->sup);
				assert_int_equal(c->superr, 0);
			}
			n++;
			keeper_release(c->kept);
			json_decref(c->doc);
			json_decref(c->sup);
			free(c);
		}
		(void)poll(&p, 1, 100);
	}
	assert_int_equal(n, 2);
	keeper_free(k);
}

struct chore {
	int	ran;
	size_t	seen;
};

static void
chore(struct spool *s, void *arg)
{
	struct chore	*c = arg;
	char		**names = NULL;
	ssize_t		  n;

	if ((n = spool_list(s, SPOOL_NEW, &names)) >= 0) {
		c->seen = (size_t)n;
		spool_names_free(names, (size_t)n);
	}
	c->ran++;
}

static void
test_tidy_once_at_a_time(void **state)
{
	struct tu_spool	*f = *state;
	struct keeper	*k;
	struct chore	 a = { 0, 0 }, b = { 0, 0 };
	struct pollfd	 p;
	char		 err[256];
	void		*got = NULL;
	int		 i;

	enqueue(f, "sms");
	k = keeper_new(f->dir, route, err, sizeof(err));
	assert_non_null(k);
	assert_int_equal(keeper_tidy(k, chore, &a), 0);
	/* Not collected yet: the next one waits. */
	assert_int_equal(keeper_tidy(k, chore, &b), 1);
	p.fd = keeper_fd(k);
	p.events = POLLIN;
	for (i = 0; i < 100 && (got = keeper_tidied(k)) == NULL; i++)
		(void)poll(&p, 1, 100);
	assert_ptr_equal(got, &a);
	assert_int_equal(a.ran, 1);
	assert_int_equal(a.seen, 1);
	/* Collected once. */
	assert_null(keeper_tidied(k));
	assert_int_equal(keeper_tidy(k, chore, &b), 0);
	for (i = 0; i < 100 && (got = keeper_tidied(k)) == NULL; i++)
		(void)poll(&p, 1, 100);
	assert_ptr_equal(got, &b);
	assert_int_equal(b.ran, 1);
	assert_int_equal(a.ran, 1);
	keeper_free(k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claims_as_many_as_asked,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_suppression_looked_up,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_full_route_left_in_new,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_tidy_once_at_a_time,
		    tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
