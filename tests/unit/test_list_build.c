/*
 * test_list_build.c: a list never built (or removed) read from every
 * file, and built again by a reindex (lib/spool/list_build.c): the same
 * pages, a reindex over a built list changing nothing, new lines after.
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

/* Lists never built (or removed): every file is read. */
static void
test_unbuilt_and_reindex(void **state)
{
	struct tu_spool		*f = *state;
	struct list_filter	 flt;
	char			 ids[40][SPOOL_ID_LEN + 1], path[4200];
	char			 next[SPOOL_ID_LEN + 1], err[256];
	char			 newest[SPOOL_ID_LEN + 1] = "";
	json_t			*a, *b;
	size_t			 i;

	for (i = 0; i < 40; i++) {
		queue(f, i % 2 ? "acme" : "beta", "+4915100000003", NULL,
		    ids[i]);
		/* Newest first is by id: within a millisecond, the ids'. */
		if (i % 2 && strcmp(ids[i], newest) > 0)
			memcpy(newest, ids[i], sizeof(newest));
	}
	assert_false(list_built(f->sp));
	filter_init(&flt);
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 20);
	assert_string_equal(id_at(a, 0), newest);
	/* Everything removed: still listed. */
	snprintf(path, sizeof(path), "rm -rf '%s'/lists", spool_root(f->sp));
	assert_int_equal(system(path), 0);
	b = page(f, "acme", &flt, next);
	assert_true(json_equal(a, b));
	json_decref(b);
	if (list_reindex(f->sp, NULL, NULL, err, sizeof(err)) != 40)
		fail_msg("reindex: %s", err);
	assert_true(list_built(f->sp));
	b = page(f, "acme", &flt, next);
	assert_true(json_equal(a, b));
	json_decref(b);
	/* A reindex again changes nothing, and new lines still come. */
	if (list_reindex(f->sp, NULL, NULL, err, sizeof(err)) != 40)
		fail_msg("reindex again: %s", err);
	b = page(f, "acme", &flt, next);
	assert_true(json_equal(a, b));
	json_decref(b);
	json_decref(a);
	queue(f, "acme", "+4915100000003", NULL, ids[0]);
	if (strcmp(ids[0], newest) > 0)
		memcpy(newest, ids[0], sizeof(newest));
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 21);
	assert_string_equal(id_at(a, 0), newest);
	json_decref(a);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup_installed, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_unbuilt_and_reindex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
