/*
 * test_hold.c: new messages held in tmp/ until their request is done
 * (lib/spool/hold.c): published into new/ and deferred/ together, again
 * harmlessly (a retry), or discarded; the names a hold refuses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "spool/spool.h"
#include "testutil.h"

/* Queue one SMS through sp, bound for dir: its id in id. */
static void
queue(struct spool *sp, enum spool_dir dir, char *id)
{
	json_t	*d;

	assert_int_equal(ulid_new(id), 0);
	d = msgdoc_new(id, "sms", "acme", 0, json_pack("{s:s,s:s}", "to",
	    "+4915112345678", "body", "held"));
	assert_int_equal(spool_enqueue(sp, d, dir), MSG_OK);
	json_decref(d);
}

static void
test_publish_then_again(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_hold	 h = { 0 };
	char			 a[ULID_LEN + 1], b[ULID_LEN + 1];

	spool_hold(f->sp, &h);
	queue(f->sp, SPOOL_NEW, a);
	queue(f->sp, SPOOL_DEFERRED, b);
	spool_hold(f->sp, NULL);
	/* Held: written, in tmp/, not yet in their states. */
	assert_int_equal(h.n, 2);
	assert_int_equal(tu_spool_entries(f, "tmp"), 2);
	assert_int_equal(tu_spool_entries(f, "new"), 0);
	assert_int_equal(tu_spool_entries(f, "deferred"), 0);
	assert_int_equal(spool_hold_publish(f->sp, &h), 0);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
	assert_int_equal(tu_spool_entries(f, "new"), 1);
	assert_int_equal(tu_spool_entries(f, "deferred"), 1);
	/* A retry that completes a request: nothing left to do. */
	assert_int_equal(spool_hold_publish(f->sp, &h), 0);
	assert_int_equal(tu_spool_entries(f, "new"), 1);
	spool_hold_free(&h);
	assert_int_equal(h.n, 0);
}

static void
test_discard(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_hold	 h = { 0 };
	char			 a[ULID_LEN + 1];

	spool_hold(f->sp, &h);
	queue(f->sp, SPOOL_NEW, a);
	spool_hold(f->sp, NULL);
	assert_int_equal(tu_spool_entries(f, "tmp"), 1);
	spool_hold_discard(f->sp, &h);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
	assert_int_equal(tu_spool_entries(f, "new"), 0);
	spool_hold_free(&h);
}

/* A hold rebuilt from a record takes only a message's own names. */
static void
test_add_refuses(void **state)
{
	struct spool_hold	 h = { 0 };
	char			 id[ULID_LEN + 1], name[64];

	(void)state;
	assert_int_equal(ulid_new(id), 0);
	snprintf(name, sizeof(name), "%s.json", id);
	assert_int_equal(spool_hold_add(&h, SPOOL_NEW, name), 0);
	assert_int_equal(spool_hold_add(&h, SPOOL_DEFERRED, name), 0);
	assert_int_equal(spool_hold_add(&h, SPOOL_SENT, name), -1);
	assert_int_equal(spool_hold_add(&h, SPOOL_NEW, "../new/x.json"), -1);
	assert_int_equal(spool_hold_add(&h, SPOOL_NEW, "notanid.json"), -1);
	assert_int_equal(h.n, 2);
	spool_hold_free(&h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_publish_then_again,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_discard,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test(test_add_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
