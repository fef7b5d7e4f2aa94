/*
 * test_list.c: each client's list of its messages (lib/spool/list.c):
 * the lines the commit engine writes, pages newest first with filters
 * and cursors across many segments, what the files say winning over a
 * line that is behind, a list never built, reindex giving the same
 * pages, compaction and erasure.
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
#include "testutil.h"

static void
filter_init(struct list_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->channel = -1;
	f->direction = -1;
	f->since = -1;
	f->until = -1;
	f->limit = 50;
}

/* A message of client to recipient queued into new/ through the
 * commit engine; its id into id. */
static void
queue(struct tu_spool *f, const char *client, const char *to,
    const char *ref, char *id)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", client, 0, json_pack("{s:s, s:s}", "to",
	    to, "body", "hi"));
	assert_non_null(doc);
	if (ref != NULL)
		json_object_set_new(doc, "reference", json_string(ref));
	assert_int_equal(spool_enqueue(f->sp, doc, SPOOL_NEW), MSG_OK);
	json_decref(doc);
}

/* A page as a JSON array; *next the cursor ("" at the end). */
static json_t *
page(struct tu_spool *f, const char *client, const struct list_filter *flt,
    char *next)
{
	struct buf	 b = { 0 };
	json_t		*a;
	size_t		 n;

	buf_puts(&b, "[");
	assert_int_equal(list_page(f->sp, client, flt, time(NULL), 0, &b, &n,
	    next), 0);
	buf_puts(&b, "]");
	a = json_loads(b.p, 0, NULL);
	assert_non_null(a);
	assert_int_equal(json_array_size(a), n);
	buf_free(&b);
	return a;
}

static int
idcmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static const char *
id_at(json_t *a, size_t i)
{
	return json_string_value(json_object_get(json_array_get(a, i), "id"));
}

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

/* Built lists: what msgspoold makes of an empty spool. */
static void
build(struct tu_spool *f)
{
	char	err[256];

	assert_true(list_reindex(f->sp, NULL, NULL, err, sizeof(err)) >= 0);
	assert_true(list_built(f->sp));
}

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
		cmocka_unit_test(test_address_key),
		T(test_pages),
		T(test_file_decides),
		T(test_unbuilt_and_reindex),
		T(test_erase_and_compact),
		T(test_compact_relinks),
		T(test_damaged_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
