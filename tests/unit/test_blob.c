/*
 * test_blob.c: unit tests for lib/spool/blob.c, the attachments stored once
 * for many messages (msgspool-spool(5)).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/mime.h"
#include "base/msgspool.h"
#include "spool/blob.h"
#include "spool/spool.h"
#include "testutil.h"

#define NMSG	3

struct fixture {
	char		 dir[TU_DIR_SIZE];	/* first: see testutil.h */
	char		 root[128];		/* dir/spool */
	struct spool	*sp;			/* open on root, created */
	char		 ids[NMSG][SPOOL_ID_LEN + 1];
	const char	*idv[NMSG];
};

static int
setup(void **state)
{
	struct fixture	*f;
	char		 err[256];
	size_t		 i;

	if ((f = tu_fixture_new(sizeof(*f), "blob")) == NULL)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/spool", f->dir);
	if ((f->sp = spool_open(f->root, 1, err, sizeof(err))) == NULL) {
		tu_fixture_free(f);
		return -1;
	}
	for (i = 0; i < NMSG; i++) {
		if (ulid_new(f->ids[i]) == -1)
			return -1;
		f->idv[i] = f->ids[i];
	}
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	spool_free(f->sp);
	return tu_teardown(state);
}

/* The path of blobs/ID.index, or of blobs/ itself when id is NULL. */
static void
blob_path(const struct fixture *f, const char *id, size_t index, char *out,
    size_t len)
{
	if (id == NULL)
		snprintf(out, len, "%s/blobs", f->root);
	else
		snprintf(out, len, "%s/blobs/%.26s.%zu", f->root, id, index);
}

static size_t
count_files(const char *dir)
{
	char	cmd[512];
	FILE	*p;
	size_t	n = 0;
	int	c;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	assert_non_null(p = popen(cmd, "r"));
	while ((c = fgetc(p)) != EOF)
		n += c == '\n';
	pclose(p);
	return n;
}

static const unsigned char data0[] = "attachment zero, shared by all";
static const unsigned char data1[] = { 0, 1, 2, 255, 254, 10, 13 };

static void
store_two(struct fixture *f)
{
	struct blob_data	v[2] = {
		{ data0, sizeof(data0) }, { data1, sizeof(data1) } };

	assert_int_equal(blob_store(f->sp, v, 2, f->idv, NMSG), MSG_OK);
}

/* One inode a attachment, a link for each message; nothing in tmp/. */
static void
test_store_links_once(void **state)
{
	struct fixture	*f = *state;
	struct stat	 st, first, nw;
	char		 path[256], tmp[256];
	size_t		 i, k;

	store_two(f);
	for (i = 0; i < 2; i++)
		for (k = 0; k < NMSG; k++) {
			blob_path(f, f->ids[k], i, path, sizeof(path));
			assert_int_equal(lstat(path, &st), 0);
			assert_true(S_ISREG(st.st_mode));
			assert_int_equal(st.st_mode & 07137, 0);
			assert_int_equal(st.st_mode & 0600, 0600);
			assert_int_equal(st.st_nlink, NMSG);
			if (k == 0)
				first = st;
			assert_int_equal(st.st_ino, first.st_ino);
		}
	blob_path(f, f->ids[1], 1, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, sizeof(data1));
	snprintf(tmp, sizeof(tmp), "%s/tmp", f->root);
	assert_int_equal(count_files(tmp), 0);
	/* blobs/ was made, like new/. */
	blob_path(f, NULL, 0, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s/new", f->root);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(stat(tmp, &nw), 0);
	assert_int_equal(st.st_mode & 07777, nw.st_mode & 07777);
	assert_int_equal(count_files(path), 2 * NMSG);
}

static void
test_store_refuses_bad_ids(void **state)
{
	struct fixture		*f = *state;
	struct blob_data	 v = { data0, sizeof(data0) };
	const char		*bad[] = { f->ids[0], "../../etc/passwd" };
	char			 path[256];

	assert_int_equal(blob_store(f->sp, &v, 1, bad, 2), MSG_PERMFAIL);
	blob_path(f, f->ids[0], 0, path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
	/* Nothing to store, nothing done. */
	assert_int_equal(blob_store(f->sp, &v, 0, f->idv, NMSG), MSG_OK);
	assert_int_equal(blob_store(f->sp, &v, 1, f->idv, 0), MSG_OK);
}

static void
test_open(void **state)
{
	struct fixture	*f = *state;
	char		 name[SPOOL_NAME_MAX], buf[64];
	size_t		 size = 0;
	int		 fd;

	store_two(f);
	/* By id, or by the spool file's name. */
	assert_true((fd = blob_open(f->sp, f->ids[2], 0, &size)) != -1);
	assert_int_equal(size, sizeof(data0));
	assert_int_equal(read(fd, buf, sizeof(buf)), sizeof(data0));
	assert_memory_equal(buf, data0, sizeof(data0));
	close(fd);
	snprintf(name, sizeof(name), "%s.json", f->ids[2]);
	assert_true((fd = blob_open(f->sp, name, 1, &size)) != -1);
	assert_int_equal(size, sizeof(data1));
	close(fd);
	/* No such blob; bad names and indexes. */
	assert_int_equal(blob_open(f->sp, f->ids[0], 2, &size), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(blob_open(f->sp, "not-an-id", 0, &size), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(blob_open(f->sp, f->ids[0], BLOB_MAX, &size), -1);
	assert_int_equal(errno, EINVAL);
	snprintf(name, sizeof(name), "%s/../x", f->ids[0]);
	assert_int_equal(blob_open(f->sp, name, 0, &size), -1);
	assert_int_equal(errno, EINVAL);
}

/* Never through a symbolic link, never blocking on a FIFO. */
static void
test_open_refuses_links_and_fifos(void **state)
{
	struct fixture	*f = *state;
	char		 path[256], secret[256];
	size_t		 size;

	store_two(f);
	snprintf(secret, sizeof(secret), "%s/secret", f->dir);
	tu_write_text(secret, "not for mailing\n");
	blob_path(f, f->ids[0], 0, path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(secret, path), 0);
	assert_int_equal(blob_open(f->sp, f->ids[0], 0, &size), -1);
	assert_int_equal(errno, EINVAL);
	blob_path(f, f->ids[1], 0, path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(5);
	assert_int_equal(blob_open(f->sp, f->ids[1], 0, &size), -1);
	alarm(0);
	assert_int_equal(errno, EINVAL);
}

/* An attachment object as a message names a blob. */
static json_t *
stored(const char *name, size_t size, size_t index)
{
	return json_pack("{s:s, s:s, s:I, s:I}", "name", name, "contentType",
	    "application/octet-stream", "size", (json_int_t)size, "blob",
	    (json_int_t)index);
}

static void
test_message_reads_back(void **state)
{
	struct fixture	*f = *state;
	enum msg_status	 st;
	json_t		*msg, *out, *atts;
	char		 err[256], *b64;
	char		 name[SPOOL_NAME_MAX];

	store_two(f);
	msg = json_pack("{s:s, s:[o, {s:s, s:s}, o]}", "to", "a@example.com",
	    "attachments", stored("one", sizeof(data0), 0), "name", "inline",
	    "content", "QQ==", stored("two", sizeof(data1), 1));
	assert_non_null(msg);
	snprintf(name, sizeof(name), "%s.json", f->ids[1]);
	out = blob_message(f->sp, name, msg, &st, err, sizeof(err));
	assert_non_null(out);
	assert_int_equal(st, MSG_OK);
	atts = json_object_get(out, "attachments");
	assert_int_equal(json_array_size(atts), 3);
	b64 = mime_base64_encode(data0, sizeof(data0));
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    atts, 0), "content")), b64);
	free(b64);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    atts, 1), "content")), "QQ==");
	b64 = mime_base64_encode(data1, sizeof(data1));
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    atts, 2), "content")), b64);
	free(b64);
	json_decref(out);
	/* The message given is left as it was. */
	assert_null(json_object_get(json_array_get(json_object_get(msg,
	    "attachments"), 0), "content"));
	json_decref(msg);

	/* Nothing stored apart: the same message. */
	msg = json_pack("{s:s, s:[]}", "to", "a@example.com", "attachments");
	out = blob_message(f->sp, name, msg, &st, err, sizeof(err));
	assert_ptr_equal(out, msg);
	json_decref(out);
	json_decref(msg);
}

static void
test_message_refuses_damage(void **state)
{
	struct fixture	*f = *state;
	enum msg_status	 st;
	json_t		*msg;
	char		 err[256];

	store_two(f);
	/* A size other than the blob's. */
	msg = json_pack("{s:[o]}", "attachments", stored("x", 3, 0));
	assert_null(blob_message(f->sp, f->ids[0], msg, &st, err,
	    sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	assert_non_null(strstr(err, "bytes"));
	json_decref(msg);
	/* A blob that is not there. */
	msg = json_pack("{s:[o]}", "attachments", stored("x", 3, 7));
	assert_null(blob_message(f->sp, f->ids[0], msg, &st, err,
	    sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	json_decref(msg);
	/* An index that is not one. */
	msg = json_pack("{s:[{s:s, s:s}]}", "attachments", "name", "x",
	    "blob", "../x");
	assert_null(blob_message(f->sp, f->ids[0], msg, &st, err,
	    sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	json_decref(msg);
	msg = json_pack("{s:[{s:s, s:i}]}", "attachments", "name", "x",
	    "blob", BLOB_MAX);
	assert_null(blob_message(f->sp, f->ids[0], msg, &st, err,
	    sizeof(err)));
	json_decref(msg);
}

static void
test_remove(void **state)
{
	struct fixture	*f = *state;
	struct stat	 st;
	char		 name[SPOOL_NAME_MAX], path[256];

	store_two(f);
	snprintf(name, sizeof(name), "%s.json", f->ids[1]);
	assert_int_equal(blob_remove(f->sp, name), 2);
	assert_int_equal(blob_remove(f->sp, name), 0);
	blob_path(f, f->ids[1], 0, path, sizeof(path));
	assert_int_equal(lstat(path, &st), -1);
	/* The others keep theirs, one link fewer. */
	blob_path(f, f->ids[0], 0, path, sizeof(path));
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_nlink, NMSG - 1);
	assert_int_equal(blob_remove(f->sp, "../etc"), 0);
}

/* Set the mtime of path to t. */
static void
age(const char *path, time_t t)
{
	struct timespec	ts[2] = { { t, 0 }, { t, 0 } };

	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW),
	    0);
}

/*
 * Prune removes what no message needs any more, and only that: blobs
 * of messages queued, deferred, being sent or failed stay, however old.
 */
static void
test_prune(void **state)
{
	struct fixture		*f = *state;
	static const enum spool_dir where[] = { SPOOL_NEW, SPOOL_DEFERRED,
	    SPOOL_FAILED, SPOOL_CUR, SPOOL_SENT };
	struct blob_data	 v = { data0, sizeof(data0) };
	char			 ids[7][SPOOL_ID_LEN + 1], path[256];
	char			 name[SPOOL_NAME_MAX];
	const char		*idv[7];
	json_t			*doc;
	time_t			 old = time(NULL) - 40 * 3600;
	size_t			 i;

	for (i = 0; i < 7; i++) {
		assert_int_equal(ulid_new(ids[i]), 0);
		idv[i] = ids[i];
	}
	/* 0-4: a message in each state; 5: none (deleted); 6: none, new. */
	assert_int_equal(blob_store(f->sp, &v, 1, idv, 6), MSG_OK);
	assert_int_equal(blob_store(f->sp, &v, 1, idv + 6, 1), MSG_OK);
	for (i = 0; i < 5; i++) {
		doc = msgdoc_new(ids[i], "email", "acme", 0,
		    json_pack("{s:s}", "to", "a@example.com"));
		snprintf(name, sizeof(name), "%.26s.json", ids[i]);
		assert_int_equal(spool_store(f->sp, where[i], name, doc,
		    SPOOL__MAX), MSG_OK);
		json_decref(doc);
	}
	blob_path(f, ids[0], 0, path, sizeof(path));
	age(path, old);		/* one inode: every link of 0-5 */
	assert_int_equal(blob_prune(f->sp, time(NULL) - 36 * 3600), 1);
	for (i = 0; i < 7; i++) {
		blob_path(f, ids[i], 0, path, sizeof(path));
		if (access(path, F_OK) != (i == 5 ? -1 : 0))
			fail_msg("blob of message %zu (%s): %s", i,
			    i < 5 ? spool_dirname(where[i]) : "none",
			    i == 5 ? "kept" : "removed");
	}
	/* The sent one is pruned: its blob goes at the next prune. */
	snprintf(name, sizeof(name), "%.26s.json", ids[4]);
	assert_int_equal(spool_remove(f->sp, SPOOL_SENT, name), 0);
	assert_int_equal(blob_prune(f->sp, time(NULL) - 36 * 3600), 1);
	blob_path(f, ids[4], 0, path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
	/* Other names in blobs/ are left alone. */
	blob_path(f, NULL, 0, path, sizeof(path));
	strcat(path, "/README");
	tu_write_text(path, "x\n");
	age(path, old);
	assert_int_equal(blob_prune(f->sp, time(NULL) + 1), 1);	/* 6 only */
	assert_int_equal(access(path, F_OK), 0);
}

/* The daemon's prune makes blobs/ when an older spool has none. */
static void
test_prune_makes_the_directory(void **state)
{
	struct fixture	*f = *state;
	struct stat	 st, nw;
	char		 path[256], nwp[256];

	blob_path(f, NULL, 0, path, sizeof(path));
	snprintf(nwp, sizeof(nwp), "%s/new", f->root);
	assert_int_equal(chmod(nwp, 02770), 0);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(blob_prune(f->sp, time(NULL)), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(stat(nwp, &nw), 0);
	assert_int_equal(st.st_mode & 07777, nw.st_mode & 07777);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_store_links_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_store_refuses_bad_ids,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_open, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_open_refuses_links_and_fifos, setup, teardown),
		cmocka_unit_test_setup_teardown(test_message_reads_back, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_message_refuses_damage,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune_makes_the_directory,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
