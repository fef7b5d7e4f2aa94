/*
 * spooldir.c: a spool in a scratch directory as a cmocka fixture, and
 * checks of the files in its state directories, for the tests of
 * lib/spool/spool.c (msgspool-spool(5)).
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

const char *const state_names[SPOOL__MAX] = {
	"tmp", "new", "deferred", "cur", "sent", "failed"
};

int
setup_dir(void **state)
{
	struct fixture	*f;

	if ((f = tu_fixture_new(sizeof(*f), "spool")) == NULL)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/spool", f->dir);
	if (mkdir(f->root, 0700) == -1) {
		tu_fixture_free(f);
		return -1;
	}
	*state = f;
	return 0;
}

/* A temporary directory with a created spool open on it. */
int
setup_spool(void **state)
{
	struct fixture	*f;
	char		 err[256];

	if (setup_dir(state) == -1)
		return -1;
	f = *state;
	f->sp = spool_open(f->root, 1, err, sizeof(err));
	if (f->sp == NULL) {
		print_error("spool_open: %s\n", err);
		return -1;
	}
	return 0;
}

int
teardown(void **state)
{
	struct fixture	*f = *state;

	spool_free(f->sp);
	tu_fixture_free(f);
	return 0;
}

void
state_path(const struct fixture *f, enum spool_dir d, const char *name,
    char *buf, size_t len)
{
	if (name == NULL)
		snprintf(buf, len, "%s/%s", f->root, state_names[d]);
	else
		snprintf(buf, len, "%s/%s/%s", f->root, state_names[d], name);
}

/* Entries of root/state, not counting "." and "..". */
size_t
count_entries(const struct fixture *f, enum spool_dir d)
{
	char		 path[512];
	DIR		*dp;
	struct dirent	*de;
	size_t		 n = 0;

	state_path(f, d, NULL, path, sizeof(path));
	dp = opendir(path);
	assert_non_null(dp);
	while ((de = readdir(dp)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(dp);
	return n;
}

int
exists(const struct fixture *f, enum spool_dir d, const char *name)
{
	char		path[512];
	struct stat	st;

	state_path(f, d, name, path, sizeof(path));
	return stat(path, &st) == 0;
}

/* The process's umask, which the modes of new files go through. */
mode_t
spool_umask(void)
{
	mode_t	m = umask(022);

	umask(m);
	return m;
}

json_t *
load_path(const char *path)
{
	json_error_t	 e;
	json_t		*v;

	v = json_load_file(path, 0, &e);
	if (v == NULL)
		fail_msg("%s is not JSON: %s", path, e.text);
	return v;
}

/*
 * The file name in d is a regular file that holds doc: its writer's,
 * readable by the group at most (SPOOL_FILE_MODE less the umask).
 */
void
assert_on_file(const struct fixture *f, enum spool_dir d, const char *name,
    const json_t *doc)
{
	char		 path[512];
	struct stat	 st;
	json_t		*onfile;

	state_path(f, d, name, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, SPOOL_FILE_MODE & ~spool_umask());
	onfile = load_path(path);
	assert_true(json_equal(onfile, doc));
	json_decref(onfile);
}

/* A fresh document with a new id (copied to id). */
json_t *
new_doc(char *id, const char *body, time_t notbefore)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", "acme", notbefore,
	    json_pack("{s:s,s:s}", "to", "+4915112345678", "body", body));
	assert_non_null(doc);
	return doc;
}

/*
 * Enqueue a fresh document with body into dest; its id in id, its file
 * name in name.  The document, for the caller to free.
 */
json_t *
enqueue(const struct fixture *f, enum spool_dir dest, const char *body,
    char *id, char *name, size_t namelen)
{
	json_t	*doc;

	doc = new_doc(id, body, 0);
	assert_int_equal(spool_enqueue(f->sp, doc, dest), MSG_OK);
	snprintf(name, namelen, "%s.json", id);
	return doc;
}
