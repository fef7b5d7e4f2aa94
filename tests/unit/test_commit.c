/*
 * test_commit.c: the spool's durable writes (lib/spool/commit.c): files land
 * whole or not at all, tmp/ stays empty, sources go once their outcome
 * is written, and what an errno means for the client.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "testutil.h"

static json_t *
doc(char *id, time_t notbefore)
{
	assert_int_equal(ulid_new(id), 0);
	return msgdoc_new(id, "sms", "acme", notbefore, json_pack("{s:s,s:s}",
	    "to", "+4915112345678", "body", "hi"));
}

static void
test_commit_many_into_states(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_item	 it[130];
	char			 ids[130][ULID_LEN + 1], path[512];
	struct stat		 st;
	size_t			 i;

	/* More than one chunk of open files, into two states. */
	for (i = 0; i < 130; i++) {
		it[i].doc = doc(ids[i], i % 2 ? time(NULL) + 600 : 0);
		it[i].dir = i % 2 ? SPOOL_DEFERRED : SPOOL_NEW;
		it[i].name = NULL;
		it[i].from = SPOOL__MAX;
	}
	assert_int_equal(spool_commit(f->sp, it, 130), 130);
	assert_int_equal(tu_spool_entries(f, "new"), 65);
	assert_int_equal(tu_spool_entries(f, "deferred"), 65);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
	/* A deferred file's mtime is when it is due. */
	snprintf(path, sizeof(path), "%s/deferred/%s.json", f->dir, ids[1]);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mtime, msgdoc_due(it[1].doc));
	for (i = 0; i < 130; i++) {
		assert_int_equal(it[i].status, MSG_OK);
		json_decref((json_t *)it[i].doc);
	}
}

static void
test_store_moves_from(void **state)
{
	struct tu_spool	*f = *state;
	char		 id[ULID_LEN + 1], name[64];
	json_t		*d;

	d = doc(id, 0);
	assert_int_equal(spool_enqueue(f->sp, d, SPOOL_NEW), MSG_OK);
	snprintf(name, sizeof(name), "%s.json", id);
	assert_int_equal(spool_move(f->sp, SPOOL_NEW, SPOOL_CUR, name), 0);
	msgdoc_attempt(d, MSG_OK, NULL, NULL, time(NULL), 0, NULL);
	assert_int_equal(spool_store(f->sp, SPOOL_SENT, name, d, SPOOL_CUR),
	    MSG_OK);
	assert_int_equal(tu_spool_entries(f, "cur"), 0);
	assert_int_equal(tu_spool_entries(f, "sent"), 1);
	/* In place: the file is replaced, nothing removed. */
	assert_int_equal(spool_store(f->sp, SPOOL_SENT, name, d, SPOOL__MAX),
	    MSG_OK);
	assert_int_equal(tu_spool_entries(f, "sent"), 1);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
	json_decref(d);
}

static void
test_refuses_bad_names(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_item	 it;
	char			 id[ULID_LEN + 1];
	json_t			*d;

	d = doc(id, 0);
	it.doc = d;
	it.dir = SPOOL_NEW;
	it.from = SPOOL__MAX;
	it.name = "../escape.json";
	assert_int_equal(spool_commit(f->sp, &it, 1), 0);
	assert_int_equal(it.status, MSG_PERMFAIL);
	json_object_set_new(d, "id", json_string("not an id"));
	assert_int_equal(spool_enqueue(f->sp, d, SPOOL_NEW), MSG_PERMFAIL);
	assert_int_equal(spool_enqueue(f->sp, d, SPOOL_SENT), MSG_PERMFAIL);
	assert_int_equal(tu_spool_entries(f, "new"), 0);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
	json_decref(d);
}

static void
test_errno_meaning(void **state)
{
	static const int temp[] = { ENOSPC, EDQUOT, EROFS, EIO, EAGAIN, EINTR,
	    EMFILE, ENFILE, ENOMEM };
	static const int perm[] = { EACCES, EPERM, ENOENT, ENOTDIR, EEXIST,
	    EINVAL };
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(temp) / sizeof(temp[0]); i++)
		assert_int_equal(spool_errno_status(temp[i]), MSG_TEMPFAIL);
	for (i = 0; i < sizeof(perm) / sizeof(perm[0]); i++)
		assert_int_equal(spool_errno_status(perm[i]), MSG_PERMFAIL);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup, tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		T(test_commit_many_into_states),
		T(test_store_moves_from),
		T(test_refuses_bad_names),
		cmocka_unit_test(test_errno_meaning),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
