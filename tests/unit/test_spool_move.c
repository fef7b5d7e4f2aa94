/*
 * test_spool_move.c: unit tests for lib/spool/spool.c (msgspool-spool(5)): the
 * sweep of tmp/, moving, storing, finding and removing a message, the
 * names and paths of its files, and uploads.
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

/* tmp/ files of this host's dead writers go; live ones and others' stay. */
static void
test_tmp_sweep(void **state)
{
	struct fixture	*f = *state;
	char		 host[NETFS_HOST_MAX + 1], name[256], path[512];
	pid_t		 dead;
	int		 status;

	netfs_hostname(host, sizeof(host));
	if ((dead = fork()) == 0)
		_exit(0);
	assert_true(dead > 0);
	assert_int_equal(waitpid(dead, &status, 0), dead);
	snprintf(name, sizeof(name), "01ARZ3NDEKTSV4RRFFQ69G5FAV.json."
	    "01ARZ3NDEKTSV4RRFFQ69G5FAW.%s.%ld", host, (long)dead);
	state_path(f, SPOOL_TMP, name, path, sizeof(path));
	tu_write_text(path, "{}");
	snprintf(name, sizeof(name), "01ARZ3NDEKTSV4RRFFQ69G5FAX.json."
	    "01ARZ3NDEKTSV4RRFFQ69G5FAY.%s.%ld", host, (long)getpid());
	state_path(f, SPOOL_TMP, name, path, sizeof(path));
	tu_write_text(path, "{}");
	snprintf(name, sizeof(name), "01ARZ3NDEKTSV4RRFFQ69G5FAZ.json."
	    "01ARZ3NDEKTSV4RRFFQ69G5FB0.other-host.%ld", (long)dead);
	state_path(f, SPOOL_TMP, name, path, sizeof(path));
	tu_write_text(path, "{}");
	state_path(f, SPOOL_TMP, ".nfs0000000000abcd00000002", path,
	    sizeof(path));
	tu_write_text(path, "{}");
	assert_int_equal(spool_tmp_sweep(f->sp), 1);
	assert_int_equal(count_entries(f, SPOOL_TMP), 3);
	assert_int_equal(spool_tmp_sweep(f->sp), 0);
}

static void
test_move(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64];

	json_decref(enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name)));
	assert_int_equal(spool_move(f->sp, SPOOL_NEW, SPOOL_CUR, name), 0);
	assert_false(exists(f, SPOOL_NEW, name));
	assert_true(exists(f, SPOOL_CUR, name));
	/* A second claim of the same file fails: it is gone. */
	errno = 0;
	assert_int_equal(spool_move(f->sp, SPOOL_NEW, SPOOL_CUR, name), -1);
	assert_int_equal(errno, ENOENT);
	assert_true(exists(f, SPOOL_CUR, name));
}

static void
test_store_replaces_and_unlinks(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64];
	json_t		*doc;

	doc = enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name));
	assert_int_equal(spool_move(f->sp, SPOOL_NEW, SPOOL_CUR, name), 0);

	json_object_set_new(doc, "attempts", json_integer(1));
	json_object_set_new(doc, "providerReply",
	    json_pack("{s:i}", "status", 201));
	assert_int_equal(spool_store(f->sp, SPOOL_SENT, name, doc, SPOOL_CUR),
	    MSG_OK);
	assert_false(exists(f, SPOOL_CUR, name));
	assert_true(exists(f, SPOOL_SENT, name));
	assert_int_equal(count_entries(f, SPOOL_TMP), 0);
	assert_on_file(f, SPOOL_SENT, name, doc);
	json_decref(doc);
}

static void
test_store_in_place(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], path[512];
	json_t		*doc, *onfile;

	doc = enqueue(f, SPOOL_DEFERRED, "x", id, name, sizeof(name));
	json_object_set_new(doc, "attempts", json_integer(3));
	json_object_set_new(doc, "lastError", json_string("HTTP 503"));
	assert_int_equal(spool_store(f->sp, SPOOL_DEFERRED, name, doc,
	    SPOOL__MAX), MSG_OK);
	assert_int_equal(count_entries(f, SPOOL_DEFERRED), 1);
	assert_int_equal(count_entries(f, SPOOL_TMP), 0);
	state_path(f, SPOOL_DEFERRED, name, path, sizeof(path));
	onfile = load_path(path);
	assert_int_equal(json_integer_value(json_object_get(onfile,
	    "attempts")), 3);
	assert_string_equal(json_string_value(json_object_get(onfile,
	    "lastError")), "HTTP 503");
	json_decref(onfile);
	json_decref(doc);
}

static void
test_find_each_state(void **state)
{
	static const enum spool_dir order[] = {
		SPOOL_DEFERRED, SPOOL_CUR, SPOOL_SENT, SPOOL_FAILED
	};
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], found[SPOOL_NAME_MAX];
	enum spool_dir	 d, prev;
	size_t		 i;

	json_decref(enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name)));

	d = SPOOL__MAX;
	assert_int_equal(spool_find(f->sp, id, &d, found), 0);
	assert_int_equal(d, SPOOL_NEW);
	assert_string_equal(found, name);
	prev = SPOOL_NEW;
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		assert_int_equal(spool_move(f->sp, prev, order[i], name), 0);
		d = SPOOL__MAX;
		found[0] = '\0';
		assert_int_equal(spool_find(f->sp, id, &d, found), 0);
		assert_int_equal(d, order[i]);
		assert_string_equal(found, name);
		prev = order[i];
	}
}

static void
test_find_not_found(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64], path[512];
	char		 found[SPOOL_NAME_MAX];
	enum spool_dir	 d;

	assert_int_equal(ulid_new(id), 0);
	assert_int_equal(spool_find(f->sp, id, &d, found), -1);
	/* A file in tmp/ is not a message yet. */
	snprintf(name, sizeof(name), "%s.json", id);
	state_path(f, SPOOL_TMP, name, path, sizeof(path));
	tu_write_text(path, "{}");
	assert_int_equal(spool_find(f->sp, id, &d, found), -1);
}

static void
test_remove(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], name[64];

	json_decref(enqueue(f, SPOOL_NEW, "x", id, name, sizeof(name)));
	assert_int_equal(spool_remove(f->sp, SPOOL_NEW, name), 0);
	assert_false(exists(f, SPOOL_NEW, name));
	assert_int_equal(count_entries(f, SPOOL_NEW), 0);
	errno = 0;
	assert_int_equal(spool_remove(f->sp, SPOOL_NEW, name), -1);
	assert_int_equal(errno, ENOENT);
}

static void
test_dirname_round_trip(void **state)
{
	int	i;

	(void)state;
	for (i = 0; i < SPOOL__MAX; i++) {
		assert_string_equal(spool_dirname((enum spool_dir)i),
		    state_names[i]);
		assert_int_equal(spool_dir_parse(state_names[i]), i);
	}
	assert_int_equal(spool_dir_parse("bogus"), -1);
	assert_int_equal(spool_dir_parse(""), -1);
	assert_int_equal(spool_dir_parse("NEW"), -1);
	assert_int_equal(spool_dir_parse("outbox"), -1);
}

static void
test_path(void **state)
{
	struct fixture	*f = *state;
	char		 buf[512], want[512], small[8];

	assert_int_equal(spool_path(f->sp, SPOOL_SENT, "X.json", buf,
	    sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%s/sent/X.json", f->root);
	assert_string_equal(buf, want);
	assert_int_equal(spool_path(f->sp, SPOOL_SENT, "X.json", small,
	    sizeof(small)), -1);
}

/* Uploads of the deprecated attachments route */

static json_t *
upload_doc(char *id, time_t created)
{
	char	ts[32];

	assert_int_equal(ulid_new(id), 0);
	rfc3339_format(created, ts, sizeof(ts));
	return json_pack("{s:i,s:s,s:s,s:s,s:i,s:s}", "version", MSGDOC_VERSION,
	    "attachmentId", id, "attachmentName", "a.txt", "contentType",
	    "text/plain", "size", 2, "created", ts);
}

static void
test_upload_round_trip(void **state)
{
	struct fixture	*f = *state;
	char		 id[SPOOL_ID_LEN + 1], other[SPOOL_ID_LEN + 1];
	char		 path[512];
	json_t		*doc, *got;
	struct stat	 st;

	doc = upload_doc(id, time(NULL));
	assert_int_equal(spool_upload_store(f->sp, "acme", doc), MSG_OK);
	snprintf(path, sizeof(path), "%s/uploads/acme/%s.json", f->root, id);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, SPOOL_FILE_MODE & ~spool_umask());
	assert_int_equal(count_entries(f, SPOOL_TMP), 0);
	/* Not a message: nothing queued. */
	assert_int_equal(count_entries(f, SPOOL_NEW), 0);

	got = spool_upload_load(f->sp, "acme", id);
	assert_non_null(got);
	assert_true(json_equal(got, doc));
	json_decref(got);
	/* Another client cannot read it. */
	assert_null(spool_upload_load(f->sp, "other", id));
	/* An id that was never stored. */
	assert_int_equal(ulid_new(other), 0);
	assert_null(spool_upload_load(f->sp, "acme", other));
	/* Nor names that are not ids or clients. */
	assert_null(spool_upload_load(f->sp, "../uploads/acme", id));
	assert_null(spool_upload_load(f->sp, "acme", "../acme/x"));
	json_decref(doc);
}

static void
test_upload_expiry(void **state)
{
	struct fixture	*f = *state;
	char		 id1[SPOOL_ID_LEN + 1], id2[SPOOL_ID_LEN + 1];
	json_t		*old, *young, *got;
	time_t		 now = time(NULL);

	/* 8 days old: expired (7 days); 6 days old: still there. */
	old = upload_doc(id1, now - 8 * 24 * 3600);
	young = upload_doc(id2, now - 6 * 24 * 3600);
	assert_int_equal(spool_upload_store(f->sp, "acme", old), MSG_OK);
	assert_int_equal(spool_upload_store(f->sp, "acme", young), MSG_OK);
	assert_null(spool_upload_load(f->sp, "acme", id1));
	got = spool_upload_load(f->sp, "acme", id2);
	assert_non_null(got);
	json_decref(got);
	json_decref(old);
	json_decref(young);
}

static void
test_upload_bad_id(void **state)
{
	struct fixture	*f = *state;
	json_t		*doc;

	doc = json_pack("{s:s,s:s}", "attachmentId", "../../escape",
	    "created", "2026-01-01T00:00:00Z");
	assert_int_not_equal(spool_upload_store(f->sp, "acme", doc), MSG_OK);
	json_decref(doc);
	doc = json_pack("{s:s}", "created", "2026-01-01T00:00:00Z");
	assert_int_not_equal(spool_upload_store(f->sp, "acme", doc), MSG_OK);
	json_decref(doc);
	assert_int_equal(count_entries(f, SPOOL_TMP), 0);
}

int
main(void)
{
#define TS(fn)	cmocka_unit_test_setup_teardown(fn, setup_spool, teardown)
	const struct CMUnitTest tests[] = {
		TS(test_tmp_sweep),
		TS(test_move),
		TS(test_store_replaces_and_unlinks),
		TS(test_store_in_place),
		TS(test_find_each_state),
		TS(test_find_not_found),
		TS(test_remove),
		cmocka_unit_test(test_dirname_round_trip),
		TS(test_path),
		TS(test_upload_round_trip),
		TS(test_upload_expiry),
		TS(test_upload_bad_id),
	};
#undef TS

	return cmocka_run_group_tests(tests, NULL, NULL);
}
