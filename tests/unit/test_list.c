/*
 * test_list.c: the lines a client's list is written with (lib/spool/
 * list.c): the form an address is listed in, a message of no client,
 * one removed, the clients that have a list.
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
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/channel.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "listutil.h"
#include "testutil.h"

static void
test_address_key(void **state)
{
	char	k[LIST_ADDRESS_MAX];

	(void)state;
	assert_int_equal(list_address_key("+4915112345678", k, sizeof(k)), 0);
	assert_string_equal(k, "+4915112345678");
	assert_int_equal(list_address_key("4915112345678", k, sizeof(k)), 0);
	assert_string_equal(k, "+4915112345678");
	assert_int_equal(list_address_key("+49 151 1234-5678", k, sizeof(k)),
	    0);
	assert_string_equal(k, "+4915112345678");
	assert_int_equal(list_address_key("Ann@Example.COM", k, sizeof(k)), 0);
	assert_string_equal(k, "Ann@example.com");
	assert_int_equal(list_address_key("abc", k, sizeof(k)), -1);
	assert_int_equal(list_address_key("", k, sizeof(k)), -1);
	assert_int_equal(list_address_key("+12", k, sizeof(k)), -1);
}


/* A message of no client (made by hand) is on no list, and one removed
 * says so: its line gone. */
static void
test_no_client(void **state)
{
	struct tu_spool		*f = *state;
	struct list_filter	 flt;
	char			 id[SPOOL_ID_LEN + 1], next[SPOOL_ID_LEN + 1];
	json_t			*doc, *a;

	build(f);
	assert_int_equal(ulid_new(id), 0);
	doc = json_pack("{s:i, s:s, s:s}", "version", 1, "id", id, "channel",
	    "sms");
	assert_int_equal(list_note(f->sp, doc, SPOOL_NEW), 0);
	json_decref(doc);
	queue(f, "acme", "+4915100000001", NULL, id);
	filter_init(&flt);
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 1);
	json_decref(a);
	assert_int_equal(list_note_gone(f->sp, "acme", id), 0);
	assert_int_equal(list_note_gone(f->sp, "acme", "not-an-id"), -1);
	assert_int_equal(errno, EINVAL);
}

/* The clients with a list: none before any, then each once. */
static void
test_clients(void **state)
{
	struct tu_spool	*f = *state;
	char		 id[SPOOL_ID_LEN + 1];
	json_t		*a;

	assert_non_null(a = list_clients(f->sp));
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	build(f);
	queue(f, "acme", "+4915100000001", NULL, id);
	queue(f, "acme", "+4915100000002", NULL, id);
	queue(f, "other.co", "+4915100000003", NULL, id);
	assert_non_null(a = list_clients(f->sp));
	assert_int_equal(json_array_size(a), 2);
	assert_true((strcmp(json_string_value(json_array_get(a, 0)), "acme") ==
	    0 && strcmp(json_string_value(json_array_get(a, 1)),
	    "other.co") == 0) || (strcmp(json_string_value(json_array_get(a,
	    0)), "other.co") == 0 && strcmp(json_string_value(
	    json_array_get(a, 1)), "acme") == 0));
	json_decref(a);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup_installed, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_address_key),
		T(test_no_client),
		T(test_clients),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
