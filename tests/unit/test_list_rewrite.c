/*
 * test_list_rewrite.c: the segments rewritten (lib/spool/list_rewrite.c):
 * erasure, compaction, and the segments left empty removed with the
 * chain of the others kept.
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
test_erase_and_compact(void **state)
{
	struct tu_spool		*f = *state;
	struct list_filter	 flt;
	char			 id[SPOOL_ID_LEN + 1], keep[SPOOL_ID_LEN + 1];
	char			 name[SPOOL_NAME_MAX], next[SPOOL_ID_LEN + 1];
	const char		*needles[] = { "+4915100000009", NULL };
	json_t			*a, *ids = json_array();
	size_t			 i;

	build(f);
	for (i = 0; i < 50; i++)
		queue(f, "acme", "+4915100000008", NULL, keep);
	queue(f, "acme", "+4915100000009", NULL, id);
	assert_int_equal(list_erase(f->sp, NULL, needles, ids), 1);
	assert_string_equal(json_string_value(json_array_get(ids, 0)), id);
	json_decref(ids);
	filter_init(&flt);
	flt.limit = 500;
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 50);
	json_decref(a);
	/* Removed by hand and said so: compaction drops it. */
	snprintf(name, sizeof(name), "%s.json", keep);
	assert_int_equal(spool_remove(f->sp, SPOOL_NEW, name), 0);
	assert_int_equal(list_note_gone(f->sp, "acme", keep), 0);
	assert_int_equal(list_compact(f->sp, time(NULL), 0), 1);
	a = page(f, "acme", &flt, next);
	assert_int_equal(json_array_size(a), 49);
	json_decref(a);
}

/* Segments left empty go, and the chain of the others still holds. */
static void
test_compact_relinks(void **state)
{
	struct tu_spool		*f = *state;
	struct list_filter	 flt;
	static char		 ids[400][SPOOL_ID_LEN + 1];
	char			 name[SPOOL_NAME_MAX], next[SPOOL_ID_LEN + 1];
	char			 cmd[4300];
	json_t			*a;
	size_t			 i, seen = 0;
	FILE			*fp;
	int			 before, after;

	build(f);
	for (i = 0; i < 400; i++)
		queue(f, "acme", "+4915100000001", NULL, ids[i]);
	qsort(ids, 400, sizeof(ids[0]), idcmp);
	/* The oldest 300 and every other one of the rest removed. */
	for (i = 0; i < 400; i++) {
		if (i >= 300 && i % 2 == 0)
			continue;
		snprintf(name, sizeof(name), "%s.json", ids[i]);
		assert_int_equal(spool_remove(f->sp, SPOOL_NEW, name), 0);
		assert_int_equal(list_note_gone(f->sp, "acme", ids[i]), 0);
	}
	snprintf(cmd, sizeof(cmd), "ls '%s'/lists/acme | grep -c '^1\\.'",
	    spool_root(f->sp));
	assert_non_null(fp = popen(cmd, "r"));
	assert_int_equal(fscanf(fp, "%d", &before), 1);
	pclose(fp);
	assert_int_equal(list_compact(f->sp, time(NULL), 0), 350);
	assert_non_null(fp = popen(cmd, "r"));
	assert_int_equal(fscanf(fp, "%d", &after), 1);
	pclose(fp);
	assert_true(after < before);
	filter_init(&flt);
	flt.limit = 9;
	do {
		a = page(f, "acme", &flt, next);
		for (i = 0; i < json_array_size(a); i++, seen++)
			assert_string_equal(id_at(a, i), ids[398 - 2 * seen]);
		json_decref(a);
		flt.after = next;
	} while (next[0] != '\0');
	assert_int_equal(seen, 50);
	/* A message older than every segment left still finds its own. */
	assert_int_equal(list_note_gone(f->sp, "acme", ids[0]), 0);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup_installed, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_erase_and_compact),
		T(test_compact_relinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
