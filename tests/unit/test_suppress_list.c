/*
 * test_suppress_list.c: the suppression lists a page at a time
 * (lib/spool/suppress_list.c): newest first, limit and cursor, a page
 * that ends the list, one channel or every one, one client or every one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "spool/spool.h"
#include "spool/suppress.h"
#include "testutil.h"

/* A page of a list: its addresses, newest first. */
static void
page_is(json_t *page, const char *const *want, size_t n)
{
	size_t	i;

	assert_non_null(page);
	assert_int_equal(json_array_size(page), n);
	for (i = 0; i < n; i++)
		assert_string_equal(json_string_value(json_object_get(
		    json_array_get(page, i), "address")), want[i]);
	json_decref(page);
}

static void
test_list(void **state)
{
	struct tu_spool	*f = *state;
	static const char *const nums[] = { "+4915100000001",
	    "+4915100000002", "+4915100000003", "+4915100000004",
	    "+4915100000005" };
	static const char *const newest[] = { "+4915100000005",
	    "+4915100000004" };
	static const char *const middle[] = { "+4915100000003",
	    "+4915100000002" };
	static const char *const oldest[] = { "+4915100000001" };
	static const char *const voice[] = { "+4915100000009" };
	json_t		*page, *all;
	char		*next, *next2, *next3;
	size_t		 i;

	/* None yet: an empty list, no error. */
	page = suppress_list(f->sp, "acme", CHANNEL__MAX, NULL, 10, &next);
	page_is(page, NULL, 0);
	assert_null(next);
	for (i = 0; i < 5; i++)
		assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_SMS,
		    nums[i], "manual", NULL, NULL), 1);
	assert_int_equal(suppress_add(f->sp, "acme", CHANNEL_VOICE,
	    "+4915100000009", "manual", NULL, NULL), 1);
	assert_int_equal(suppress_add(f->sp, "other", CHANNEL_SMS,
	    "+4915100000007", "manual", NULL, NULL), 1);
	page = suppress_list(f->sp, "acme", CHANNEL_SMS, NULL, 2, &next);
	page_is(page, newest, 2);
	assert_non_null(next);
	assert_true(suppress_cursor_valid(next));
	page = suppress_list(f->sp, "acme", CHANNEL_SMS, next, 2, &next2);
	page_is(page, middle, 2);
	assert_non_null(next2);
	page = suppress_list(f->sp, "acme", CHANNEL_SMS, next2, 2, &next3);
	page_is(page, oldest, 1);
	assert_null(next3);
	/* A page that ends the list exactly has no next. */
	page = suppress_list(f->sp, "acme", CHANNEL_SMS, next, 3, &next3);
	page_is(page, (const char *const[]){ "+4915100000003",
	    "+4915100000002", "+4915100000001" }, 3);
	assert_null(next3);
	free(next);
	free(next2);
	/* Every channel of the client: the voice one is the newest. */
	page = suppress_list(f->sp, "acme", CHANNEL__MAX, NULL, 1, &next);
	page_is(page, voice, 1);
	free(next);
	all = suppress_list(f->sp, "acme", CHANNEL__MAX, NULL, 0, NULL);
	assert_int_equal(json_array_size(all), 6);
	assert_null(json_object_get(json_array_get(all, 0), "client"));
	json_decref(all);
	/* Every client's, each naming its client. */
	all = suppress_list(f->sp, NULL, CHANNEL__MAX, NULL, 0, NULL);
	assert_int_equal(json_array_size(all), 7);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(all, 0), "client")), "other");
	json_decref(all);
	/* Not a cursor, not a client: EINVAL. */
	assert_null(suppress_list(f->sp, "acme", CHANNEL__MAX, "x", 2, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(suppress_list(f->sp, "../x", CHANNEL__MAX, NULL, 2,
	    NULL));
	assert_int_equal(errno, EINVAL);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup_installed, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
