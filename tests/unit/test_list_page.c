/*
 * test_list_page.c: pages of a client's list (lib/spool/list_page.c):
 * newest first across many segments, filters and cursors, what the files
 * say winning over a line that is behind, a damaged line.
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
test_pages(void **state)
{
	struct tu_spool		*f = *state;
	struct list_filter	 flt;
	static char		 ids[300][SPOOL_ID_LEN + 1];
	char			 next[SPOOL_ID_LEN + 1], other[SPOOL_ID_LEN + 1];
	json_t			*a;
	size_t			 i, seen = 0;

	build(f);
	/* Enough for many segments. */
	for (i = 0; i < 300; i++)
		queue(f, "acme", i % 3 ? "+4915100000001" : "+4915100000002",
		    i == 7 ? "order-7" : NULL, ids[i]);
	queue(f, "other", "+4915100000001", NULL, other);
	filter_init(&flt);
	flt.limit = 7;
	/* Newest first is the ids' order (within a millisecond, theirs). */
	qsort(ids, 300, sizeof(ids[0]), idcmp);
	do {
		a = page(f, "acme", &flt, next);
		for (i = 0; i < json_array_size(a); i++, seen++)
			assert_string_equal(id_at(a, i), ids[299 - seen]);
		json_decref(a);
		flt.after = next;
	} while (next[0] != '\0');
	assert_int_equal(seen, 300);
	/* Filters. */
	filter_init(&flt);
	flt.reference = "order-7";
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 1);
	json_decref(a);
	filter_init(&flt);
	flt.address = "+4915100000002";
	flt.limit = 500;
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 100);
	assert_string_equal(next, "");
	json_decref(a);
	filter_init(&flt);
	flt.statuses = 1u << LIST_SENT;
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	filter_init(&flt);
	flt.statuses = 1u << LIST_QUEUED;
	flt.limit = 500;
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 300);
	json_decref(a);
	/* Another client's list is its own. */
	filter_init(&flt);
	a = page(f, "other", &flt, next);
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(id_at(a, 0), other);
	json_decref(a);
}

/* A message moved on with no line of it written: its file decides. */
static void
test_file_decides(void **state)
{
	struct tu_spool		*f = *state;
	struct list_filter	 flt;
	char			 id[SPOOL_ID_LEN + 1], name[SPOOL_NAME_MAX];
	char			 next[SPOOL_ID_LEN + 1];
	json_t			*a;

	build(f);
	queue(f, "acme", "+4915100000001", NULL, id);
	snprintf(name, sizeof(name), "%s.json", id);
	/* Claimed: a rename only. */
	assert_int_equal(spool_move(f->sp, SPOOL_NEW, SPOOL_CUR, name), 0);
	filter_init(&flt);
	flt.statuses = 1u << LIST_SENDING;
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(a, 0), "status")), "sending");
	json_decref(a);
	/* Gone without a word: not listed. */
	assert_int_equal(spool_remove(f->sp, SPOOL_CUR, name), 0);
	filter_init(&flt);
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
}

/* A line damaged since it was written: the message's file tells. */
static void
test_damaged_line(void **state)
{
	struct tu_spool		*f = *state;
	struct list_filter	 flt;
	char			 id[SPOOL_ID_LEN + 1], cmd[4400];
	char			 next[SPOOL_ID_LEN + 1];
	json_t			*a, *doc;

	build(f);
	queue(f, "acme", "+4915100000001", "before", id);
	/* Its reference in the object garbled, the hash left alone. */
	snprintf(cmd, sizeof(cmd), "sed -i 's/\"before\"/\"bef0re\"/' "
	    "'%s'/lists/acme/1.*", spool_root(f->sp));
	assert_int_equal(system(cmd), 0);
	filter_init(&flt);
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 1);
	doc = json_array_get(a, 0);
	assert_string_equal(json_string_value(json_object_get(doc,
	    "reference")), "before");
	assert_string_equal(json_string_value(json_object_get(doc, "id")), id);
	json_decref(a);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup_installed, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_pages),
		T(test_file_decides),
		T(test_damaged_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
