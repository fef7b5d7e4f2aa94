/*
 * test_spool.c: unit tests for lib/spool/spool.c (msgspool-spool(5)): opening a
 * spool, the new document, enqueueing, listing, scanning on and loading,
 * and what a load or a claim does with files that are no message.
 * Moves, stores, finds, removes, paths and uploads: test_spool_move.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/msgspool.h"
#include "base/netfs.h"
#include "spool/spool.h"
#include "spooldir.h"
#include "testutil.h"

static void
test_open_without_create(void **state)
{
	struct fixture	*f = *state;
	struct spool	*sp;
	char		 err[256] = "";

	sp = spool_open(f->root, 0, err, sizeof(err));
	assert_null(sp);
	assert_true(err[0] != '\0');
}

static void
test_open_with_create(void **state)
{
	struct fixture	*f = *state;
	struct spool	*sp;
	struct stat	 st;
	char		 err[256] = "", path[512];
	int		 i;

	sp = spool_open(f->root, 1, err, sizeof(err));
	if (sp == NULL)
		fail_msg("spool_open(create): %s", err);
	assert_string_equal(spool_root(sp), f->root);
	for (i = 0; i < SPOOL__MAX; i++) {
		state_path(f, (enum spool_dir)i, NULL, path, sizeof(path));
		assert_int_equal(stat(path, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
		assert_int_equal(st.st_mode & 07777, 0700);
	}
	spool_free(sp);

	/* Now complete: opens without create too. */
	sp = spool_open(f->root, 0, err, sizeof(err));
	if (sp == NULL)
		fail_msg("spool_open(no create): %s", err);
	spool_free(sp);
}

static void
test_open_one_missing(void **state)
{
	struct fixture	*f = *state;
	struct spool	*sp;
	char		 err[256] = "", path[512];

	sp = spool_open(f->root, 1, err, sizeof(err));
	assert_non_null(sp);
	spool_free(sp);
	state_path(f, SPOOL_FAILED, NULL, path, sizeof(path));
	assert_int_equal(rmdir(path), 0);
	err[0] = '\0';
	assert_null(spool_open(f->root, 0, err, sizeof(err)));
	assert_true(err[0] != '\0');
	/* create puts it back. */
	sp = spool_open(f->root, 1, err, sizeof(err));
	assert_non_null(sp);
	assert_true(exists(f, SPOOL_FAILED, NULL));
	spool_free(sp);
}

static void
test_free_null(void **state)
{
	(void)state;
	spool_free(NULL);
	spool_names_free(NULL, 0);
	assert_true(1);	/* reached: both accept NULL */
}

/* qsort on an array of char arrays. */
static int
cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

static time_t
parse_utc(const char *s)
{
	struct tm	 tm;
	const char	*end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0')
		fail_msg("not RFC 3339 UTC: %s", s);
	return timegm(&tm);
}

static void
test_doc_new_fields(void **state)
{
	char		 id[SPOOL_ID_LEN + 1];
	json_t		*doc, *msg, *copy, *v;
	time_t		 now, t;

	(void)state;
	assert_int_equal(ulid_new(id), 0);
	msg = json_pack("{s:s,s:s}", "to", "+4915112345678", "body", "hi");
	copy = json_deep_copy(msg);
	now = time(NULL);
	doc = msgdoc_new(id, "sms", "acme", 0, msg);
	assert_non_null(doc);

	assert_true(json_is_integer(json_object_get(doc, "version")));
	assert_int_equal(json_integer_value(json_object_get(doc, "version")),
	    MSGDOC_VERSION);
	assert_int_equal(MSGDOC_VERSION, 1);
	assert_string_equal(json_string_value(json_object_get(doc, "id")), id);
	assert_string_equal(json_string_value(json_object_get(doc, "channel")),
	    "sms");
	assert_string_equal(json_string_value(json_object_get(doc, "client")),
	    "acme");
	v = json_object_get(doc, "created");
	assert_true(json_is_string(v));
	t = parse_utc(json_string_value(v));
	assert_true(t >= now - 60 && t <= now + 60);
	assert_true(json_is_integer(json_object_get(doc, "attempts")));
	assert_int_equal(json_integer_value(json_object_get(doc, "attempts")),
	    0);
	/* notbefore 0: due now. */
	v = json_object_get(doc, "nextAttempt");
	assert_non_null(v);
	if (json_is_string(v))
		t = parse_utc(json_string_value(v));
	else if (json_is_integer(v))
		t = (time_t)json_integer_value(v);
	else
		fail_msg("nextAttempt is neither a time string nor a number");
	assert_true(t >= now - 60 && t <= now + 60);
	v = json_object_get(doc, "lastError");
	assert_non_null(v);
	assert_true(json_is_null(v));
	v = json_object_get(doc, "providerReply");
	assert_non_null(v);
	assert_true(json_is_null(v));
	assert_true(json_equal(json_object_get(doc, "message"), copy));
	json_decref(copy);
	json_decref(doc);
}

static void
test_doc_new_notbefore(void **state)
{
	char		 id[SPOOL_ID_LEN + 1];
	json_t		*doc, *v;

	(void)state;
	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "voice", "acme", (time_t)2000000000,
	    json_object());
	assert_non_null(doc);
	v = json_object_get(doc, "nextAttempt");
	if (json_is_string(v))
		assert_string_equal(json_string_value(v),
		    "2033-05-18T03:33:20Z");
	else if (json_is_integer(v))
		assert_int_equal(json_integer_value(v), 2000000000);
	else
		fail_msg("nextAttempt is neither a time string nor a number");
	json_decref(doc);
}

/* Enqueue into dest; check the file, its mode, its contents, tmp/. */
static void
check_enqueue(struct fixture *f, enum spool_dir dest)
{
	char		 id[SPOOL_ID_LEN + 1], name[64];
	json_t		*doc;
	enum spool_dir	 other;

	other = dest == SPOOL_NEW ? SPOOL_DEFERRED : SPOOL_NEW;
	doc = enqueue(f, dest, "hello", id, name, sizeof(name));
	assert_int_equal(count_entries(f, dest), 1);
	assert_int_equal(count_entries(f, other), 0);
	assert_int_equal(count_entries(f, SPOOL_TMP), 0);
	assert_true(exists(f, dest, name));
	assert_on_file(f, dest, name, doc);
	json_decref(doc);
}

static void
test_enqueue_new(void **state)
{
	check_enqueue(*state, SPOOL_NEW);
}

static void
test_enqueue_deferred(void **state)
{
	check_enqueue(*state, SPOOL_DEFERRED);
}

static void
test_enqueue_many(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1];
	json_t		*doc;
	int		 i;

	for (i = 0; i < 20; i++) {
		doc = new_doc(id, "x", 0);
		assert_int_equal(spool_enqueue(f->sp, doc, SPOOL_NEW), MSG_OK);
		json_decref(doc);
	}
	assert_int_equal(count_entries(f, SPOOL_NEW), 20);
	assert_int_equal(count_entries(f, SPOOL_TMP), 0);
}

static void
test_list_sorted(void **state)
{
	struct fixture	*f = *state;
	char		 ids[5][SPOOL_ID_LEN + 1], want[5][160], path[512];
	json_t		*docs[5];
	char		**names = NULL;
	ssize_t		 n;
	int		 i;

	for (i = 0; i < 5; i++)
		docs[i] = new_doc(ids[i], "x", 0);
	/* Enqueue in reverse; the listing is sorted anyway. */
	for (i = 4; i >= 0; i--) {
		assert_int_equal(spool_enqueue(f->sp, docs[i], SPOOL_NEW),
		    MSG_OK);
		json_decref(docs[i]);
	}
	for (i = 0; i < 5; i++)
		snprintf(want[i], sizeof(want[i]), "%s.json", ids[i]);
	qsort(want, 5, sizeof(want[0]), cmp_name);
	/* Names that do not start with an id are left out. */
	state_path(f, SPOOL_NEW, "README", path, sizeof(path));
	tu_write_text(path, "not a message\n");
	state_path(f, SPOOL_NEW, ".hidden", path, sizeof(path));
	tu_write_text(path, "{}\n");

	n = spool_list(f->sp, SPOOL_NEW, &names);
	assert_int_equal(n, 5);
	for (i = 0; i < 5; i++)
		assert_string_equal(names[i], want[i]);
	spool_names_free(names, (size_t)n);
}

static void
test_list_empty(void **state)
{
	struct fixture	*f = *state;
	char		**names = NULL;
	ssize_t		 n;

	n = spool_list(f->sp, SPOOL_FAILED, &names);
	assert_int_equal(n, 0);
	spool_names_free(names, 0);
}

static void
test_load(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], err[256] = "";
	json_t		*doc, *got;

	doc = enqueue(f, SPOOL_DEFERRED, "load me", id, name, sizeof(name));
	got = spool_load(f->sp, SPOOL_DEFERRED, name, err, sizeof(err));
	if (got == NULL)
		fail_msg("spool_load: %s", err);
	assert_true(json_equal(got, doc));
	json_decref(got);
	json_decref(doc);
}

static void
test_load_missing(void **state)
{
	struct fixture	*f = *state;
	char		 err[256] = "";

	errno = 0;
	assert_null(spool_load(f->sp, SPOOL_NEW,
	    "01ARZ3NDEKTSV4RRFFQ69G5FAV.json", err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_true(err[0] != '\0');
}

static void
test_load_wrong_version(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], path[512], text[512];
	char		 err[256] = "";

	assert_int_equal(ulid_new(id), 0);
	snprintf(name, sizeof(name), "%s.json", id);
	snprintf(text, sizeof(text), "{\"version\": 99, \"id\": \"%s\", "
	    "\"channel\": \"sms\", \"client\": \"acme\", "
	    "\"created\": \"2026-01-01T00:00:00Z\", \"attempts\": 0, "
	    "\"nextAttempt\": \"2026-01-01T00:00:00Z\", \"lastError\": null, "
	    "\"providerReply\": null, \"message\": {}}\n", id);
	state_path(f, SPOOL_NEW, name, path, sizeof(path));
	tu_write_text(path, text);
	assert_null(spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err)));
	assert_true(err[0] != '\0');
}

static void
test_load_not_json(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], path[512];
	char		 err[256] = "";

	assert_int_equal(ulid_new(id), 0);
	snprintf(name, sizeof(name), "%s.json", id);
	state_path(f, SPOOL_NEW, name, path, sizeof(path));
	tu_write_text(path, "{ this is not json");
	assert_null(spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err)));
	assert_true(err[0] != '\0');
}

/* A document written as dir/name with the given id. */
static void
write_doc_as(const struct fixture *f, enum spool_dir d, const char *name,
    const char *id)
{
	char	path[512], text[1024];

	snprintf(text, sizeof(text), "{\"version\": 1, \"id\": \"%s\", "
	    "\"channel\": \"sms\", \"client\": \"acme\", "
	    "\"created\": \"2026-01-01T00:00:00Z\", \"attempts\": 0, "
	    "\"nextAttempt\": \"2026-01-01T00:00:00Z\", \"lastError\": null, "
	    "\"providerReply\": null, \"message\": {\"to\": \"+4915112345678\","
	    " \"body\": \"x\"}}\n", id);
	state_path(f, d, name, path, sizeof(path));
	tu_write_text(path, text);
}

/* The id inside must be the one the file name starts with. */
static void
test_load_id_must_match_name(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], other[SPOOL_ID_LEN + 1];
	char		 name[64], err[256] = "";
	json_t		*doc;
	int		 fd;

	assert_int_equal(ulid_new(id), 0);
	assert_int_equal(ulid_new(other), 0);
	snprintf(name, sizeof(name), "%s.json", id);
	write_doc_as(f, SPOOL_NEW, name, "/../../../pwned");
	assert_null(spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err)));
	assert_non_null(strstr(err, "id"));
	write_doc_as(f, SPOOL_NEW, name, other);
	assert_null(spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err)));
	/* A claim reads it the same way: no document, so failed/. */
	fd = spool_claim(f->sp, name, &doc, err, sizeof(err));
	assert_true(fd >= 0);
	assert_null(doc);
	close(fd);
	write_doc_as(f, SPOOL_NEW, name, id);
	doc = spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err));
	assert_non_null(doc);
	json_decref(doc);
}

/*
 * A symbolic link in new/ is never followed: not by a load, not by a
 * claim, which moves the link itself aside to failed/.
 */
static void
test_symlink_not_followed(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], err[256] = "";
	char		 target[512], path[512];
	json_t		*doc;
	struct stat	 st;

	assert_int_equal(ulid_new(id), 0);
	snprintf(name, sizeof(name), "%s.json", id);
	/* A valid document outside the spool. */
	write_doc_as(f, SPOOL_TMP, name, id);
	state_path(f, SPOOL_TMP, name, target, sizeof(target));
	state_path(f, SPOOL_NEW, name, path, sizeof(path));
	assert_int_equal(symlink(target, path), 0);
	assert_null(spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err)));
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(spool_claim(f->sp, name, &doc, err, sizeof(err)), -1);
	assert_null(doc);
	assert_false(exists(f, SPOOL_NEW, name));
	state_path(f, SPOOL_FAILED, name, path, sizeof(path));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_false(exists(f, SPOOL_CUR, name));
	/* spool_find does not see it either. */
	{
		enum spool_dir	 d;
		char		 found[SPOOL_NAME_MAX];

		assert_int_equal(spool_find(f->sp, id, &d, found), -1);
	}
}

/* A FIFO never blocks a load or a claim; a directory is no message. */
static void
test_fifo_and_dir_do_not_block(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], dir_id[SPOOL_ID_LEN + 1];
	char		 name[64], dname[64], path[512], err[256] = "";
	json_t		*doc;

	assert_int_equal(ulid_new(id), 0);
	snprintf(name, sizeof(name), "%s.json", id);
	state_path(f, SPOOL_NEW, name, path, sizeof(path));
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(5);	/* a hang fails the test instead of the suite */
	assert_null(spool_load(f->sp, SPOOL_NEW, name, err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(spool_claim(f->sp, name, &doc, err, sizeof(err)), -1);
	assert_true(exists(f, SPOOL_FAILED, name));
	assert_int_equal(ulid_new(dir_id), 0);
	snprintf(dname, sizeof(dname), "%s.json", dir_id);
	state_path(f, SPOOL_NEW, dname, path, sizeof(path));
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(spool_claim(f->sp, dname, &doc, err, sizeof(err)),
	    -1);
	assert_true(exists(f, SPOOL_FAILED, dname));
	alarm(0);
}

/* NFS leaves .nfsXXXX files behind: never taken, moved or pruned. */
static void
test_dot_files_ignored(void **state)
{
	struct fixture	*f = *state;
	char		 path[512], **names;
	ssize_t		 n;
	int		 d;

	for (d = SPOOL_TMP; d < SPOOL__MAX; d++) {
		state_path(f, (enum spool_dir)d, ".nfs000000000012345600000001",
		    path, sizeof(path));
		tu_write_text(path, "{}");
	}
	assert_int_equal(spool_recover(f->sp), 0);
	n = spool_list(f->sp, SPOOL_NEW, &names);
	assert_int_equal(n, 0);
	spool_names_free(names, 0);
	assert_int_equal(spool_prune(f->sp, SPOOL_TMP, time(NULL) + 3600), 0);
	for (d = SPOOL_TMP; d < SPOOL__MAX; d++)
		assert_int_equal(count_entries(f, (enum spool_dir)d), 1);
}

/* spool_scan_on's fn: the name taken, or every name seen with want 0. */
struct scan_seen {
	char	names[8][160];
	int	n;
	int	want;
};

static int
scan_take(void *arg, const char *name)
{
	struct scan_seen	*w = arg;

	if (w->n < 8)
		snprintf(w->names[w->n], sizeof(w->names[0]), "%s", name);
	w->n++;
	return w->want != 0 && w->n >= w->want;
}

/*
 * spool_scan_on goes on where it stopped: three files taken one a call
 * are three names; then, at the end, from the top once (a file that came
 * in is seen), and a call with nothing to stop it sees every name.
 */
static void
test_scan_on_goes_on(void **state)
{
	struct fixture		*f = *state;
	struct scan_seen	 w;
	char			 id[SPOOL_ID_LEN + 1], name[160];
	json_t			*doc;
	int			 i;

	for (i = 0; i < 3; i++)
		json_decref(enqueue(f, SPOOL_NEW, "x", id, name,
		    sizeof(name)));
	memset(&w, 0, sizeof(w));
	for (i = 0; i < 3; i++) {
		w.want = w.n + 1;
		assert_int_equal(spool_scan_on(f->sp, SPOOL_NEW, scan_take,
		    &w), 1);
	}
	assert_int_equal(w.n, 3);
	assert_string_not_equal(w.names[0], w.names[1]);
	assert_string_not_equal(w.names[1], w.names[2]);
	assert_string_not_equal(w.names[0], w.names[2]);
	doc = enqueue(f, SPOOL_NEW, "late", id, name, sizeof(name));
	json_decref(doc);
	/* At the end: from the top, where the late one is too. */
	memset(&w, 0, sizeof(w));
	assert_int_equal(spool_scan_on(f->sp, SPOOL_NEW, scan_take, &w), 0);
	assert_true(w.n >= 4);
	for (i = 0; i < w.n && i < 8; i++)
		if (strcmp(w.names[i], name) == 0)
			break;
	assert_true(i < w.n && i < 8);
}

int
main(void)
{
#define TD(fn)	cmocka_unit_test_setup_teardown(fn, setup_dir, teardown)
#define TS(fn)	cmocka_unit_test_setup_teardown(fn, setup_spool, teardown)
	const struct CMUnitTest tests[] = {
		TD(test_open_without_create),
		TD(test_open_with_create),
		TD(test_open_one_missing),
		cmocka_unit_test(test_free_null),
		cmocka_unit_test(test_doc_new_fields),
		cmocka_unit_test(test_doc_new_notbefore),
		TS(test_enqueue_new),
		TS(test_enqueue_deferred),
		TS(test_enqueue_many),
		TS(test_list_sorted),
		TS(test_list_empty),
		TS(test_load),
		TS(test_load_missing),
		TS(test_load_wrong_version),
		TS(test_load_not_json),
		TS(test_load_id_must_match_name),
		TS(test_symlink_not_followed),
		TS(test_fifo_and_dir_do_not_block),
		TS(test_dot_files_ignored),
		TS(test_scan_on_goes_on),
	};
#undef TD
#undef TS

	return cmocka_run_group_tests(tests, NULL, NULL);
}
