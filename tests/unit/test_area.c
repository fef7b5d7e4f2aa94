/*
 * test_area.c: the spool's areas (lib/spool/area.c): made on demand with
 * new/'s mode, documents stored whole and scanned in the order they
 * came, the index, a lock on one of its files, and names that would
 * leave the area refused.
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
#include <unistd.h>

#include <jansson.h>

#include "spool/spool.h"
#include "testutil.h"

static json_t *
rdoc(char *id, const char *what)
{
	assert_int_equal(ulid_new(id), 0);
	return json_pack("{s:i, s:s, s:s}", "version", MSGDOC_VERSION, "id",
	    id, "what", what);
}

struct seen {
	char	names[8][SPOOL_NAME_MAX];
	size_t	n;
};

static int
collect(void *arg, const char *name)
{
	struct seen	*s = arg;

	snprintf(s->names[s->n++], SPOOL_NAME_MAX, "%s", name);
	return 0;
}

static void
test_store_scan_load_remove(void **state)
{
	struct tu_spool	*f = *state;
	char		 a[ULID_LEN + 1], b[ULID_LEN + 1], name[64], path[512];
	const json_t	*docs[2];
	json_t		*da, *db, *got;
	struct seen	 seen;
	struct stat	 st;

	memset(&seen, 0, sizeof(seen));
	/* Nothing there yet: nothing to scan, no error. */
	assert_int_equal(spool_area_scan(f->sp, "receipts", collect, &seen),
	    0);
	assert_int_equal(seen.n, 0);
	da = rdoc(a, "first");
	usleep(2000);
	db = rdoc(b, "second");
	docs[0] = db;
	docs[1] = da;
	assert_int_equal(spool_area_store(f->sp, "receipts", docs, 2), MSG_OK);
	snprintf(path, sizeof(path), "%s/receipts", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 02770);
	/* In the order they came, whatever the order stored. */
	assert_int_equal(spool_area_scan(f->sp, "receipts", collect, &seen),
	    0);
	assert_int_equal(seen.n, 2);
	snprintf(name, sizeof(name), "%s.json", a);
	assert_string_equal(seen.names[0], name);
	got = spool_area_load(f->sp, "receipts", name, NULL, 0);
	assert_non_null(got);
	assert_string_equal(json_string_value(json_object_get(got, "what")),
	    "first");
	json_decref(got);
	assert_int_equal(spool_area_remove(f->sp, "receipts", name), 0);
	assert_null(spool_area_load(f->sp, "receipts", name, NULL, 0));
	assert_null(spool_area_load(f->sp, "receipts", "../new", NULL, 0));
	assert_int_equal(spool_area(f->sp, "../etc", 1), -1);
	assert_int_equal(spool_area(f->sp, ".hidden", 1), -1);
	json_decref(da);
	json_decref(db);
}

static void
test_index(void **state)
{
	struct tu_spool	*f = *state;
	char		 id[ULID_LEN + 1], got[ULID_LEN + 1];

	assert_int_equal(ulid_new(id), 0);
	assert_int_equal(spool_index_get(f->sp, "abc", got), -1);
	assert_int_equal(spool_index_put(f->sp, "abc", id), 0);
	assert_int_equal(spool_index_get(f->sp, "abc", got), 0);
	assert_string_equal(got, id);
	assert_int_equal(spool_index_put(f->sp, "../x", id), -1);
	assert_int_equal(spool_index_put(f->sp, ".x", id), -1);
	/* Pruned by age. */
	assert_int_equal(spool_area_prune(f->sp, "index", time(NULL) + 10),
	    1);
	assert_int_equal(spool_index_get(f->sp, "abc", got), -1);
}

/* An entry added only when its key is new: the first one stays. */
static void
test_index_add(void **state)
{
	struct tu_spool	*f = *state;
	char		 a[ULID_LEN + 1], b[ULID_LEN + 1], had[ULID_LEN + 1];

	assert_int_equal(ulid_new(a), 0);
	assert_int_equal(ulid_new(b), 0);
	assert_int_equal(spool_index_add(f->sp, "in", a, had), 0);
	assert_int_equal(spool_index_add(f->sp, "in", b, had), 1);
	assert_string_equal(had, a);
	assert_int_equal(spool_index_get(f->sp, "in", had), 0);
	assert_string_equal(had, a);
	/* Nothing of its own left beside the entry. */
	assert_int_equal(spool_area_prune(f->sp, "index", time(NULL) + 10),
	    1);
	assert_int_equal(spool_index_add(f->sp, "../x", a, had), -1);
	assert_int_equal(spool_index_add(f->sp, ".x", a, had), -1);
}

/*
 * A lock on an area's file: one holder at a time (another open of it, as
 * another process's, is EBUSY), free again once closed; a file removed
 * by its holder is ENOENT to the next, as one never there.
 */
static void
test_lock(void **state)
{
	struct tu_spool	*f = *state;
	const json_t	*docs[1];
	json_t		*doc;
	char		 id[ULID_LEN + 1], name[SPOOL_NAME_MAX];
	int		 a, b;

	doc = rdoc(id, "note");
	docs[0] = doc;
	assert_int_equal(spool_area_store(f->sp, "inbox-new", docs, 1),
	    MSG_OK);
	snprintf(name, sizeof(name), "%s.json", id);
	assert_true((a = spool_area_lock(f->sp, "inbox-new", name)) >= 0);
	assert_int_equal(spool_area_lock(f->sp, "inbox-new", name), -1);
	assert_int_equal(errno, EBUSY);
	close(a);
	assert_true((b = spool_area_lock(f->sp, "inbox-new", name)) >= 0);
	assert_int_equal(spool_area_remove(f->sp, "inbox-new", name), 0);
	close(b);
	assert_int_equal(spool_area_lock(f->sp, "inbox-new", name), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(spool_area_lock(f->sp, "inbox-new", "../x"), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(spool_area_lock(f->sp, "no-such-area", name), -1);
	assert_int_equal(errno, ENOENT);
	json_decref(doc);
}

/* A daemon's status file: replaced whole, read back, plain names only. */
static void
test_status(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*doc, *got;

	assert_null(spool_status_get(f->sp, "smpp-sms"));
	doc = json_pack("{s:s, s:i}", "state", "bound", "inUse", 3);
	assert_int_equal(spool_status_put(f->sp, "smpp-sms", doc), 0);
	json_object_set_new(doc, "inUse", json_integer(4));
	assert_int_equal(spool_status_put(f->sp, "smpp-sms", doc), 0);
	got = spool_status_get(f->sp, "smpp-sms");
	assert_non_null(got);
	assert_true(json_equal(got, doc));
	json_decref(got);
	assert_int_equal(spool_status_put(f->sp, "../x", doc), -1);
	assert_int_equal(spool_status_put(f->sp, ".x", doc), -1);
	assert_int_equal(spool_status_put(f->sp, "", doc), -1);
	json_decref(doc);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup_installed, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_store_scan_load_remove),
		T(test_index),
		T(test_index_add),
		T(test_status),
		T(test_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
