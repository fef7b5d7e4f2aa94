/*
 * test_spool_seen.c: unit tests for lib/spool/spool_seen.c, a spool
 * opened request after request whose states are looked at again only
 * when its root changed: a state removed, renamed or replaced is still
 * an error at the next open; a root changed lately, or with a state
 * that is a symbolic link, is never trusted; on a local file system
 * the root and states held from one open to the next, and let go.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spooldir.h"

/* The root's modification time an hour ago: settled. */
static void
settle(const struct fixture *f)
{
	struct timespec	ts[2];

	assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts[0]), 0);
	ts[0].tv_sec -= 3600;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, f->root, ts, 0), 0);
}

/* spool_open_seen of f's root: whether it opened. */
static int
opens(const struct fixture *f, struct spool_seen *seen)
{
	struct spool	*s;
	char		 err[256];

	if ((s = spool_open_seen(f->root, seen, err, sizeof(err))) == NULL)
		return 0;
	spool_free(s);
	return 1;
}

static void
test_seen_then_removed(void **state)
{
	struct fixture		*f = *state;
	struct spool_seen	 seen;
	struct spool		*s;
	enum spool_dir		 d;
	char			 path[256], path2[300], name[SPOOL_NAME_MAX];
	char			 err[256];
	struct timespec		 ts[2];
	int			 fd;

	memset(&seen, 0, sizeof(seen));
	/* Just made: not trusted yet. */
	assert_true(opens(f, &seen));
	assert_false(seen.valid);
	settle(f);
	assert_true(opens(f, &seen));
	assert_true(seen.valid);
	/* Trusted: a spool that works, its states found. */
	state_path(f, SPOOL_SENT, "01ARZ3NDEKTSV4RRFFQ69G5FAV.json", path,
	    sizeof(path));
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	s = spool_open_seen(f->root, &seen, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(spool_find(s, "01ARZ3NDEKTSV4RRFFQ69G5FAV", &d, name),
	    0);
	assert_int_equal(d, SPOOL_SENT);
	spool_free(s);
	/* A state removed: an error, as spool_open's. */
	state_path(f, SPOOL_NEW, NULL, path, sizeof(path));
	assert_int_equal(rmdir(path), 0);
	assert_false(opens(f, &seen));
	assert_false(seen.valid);
	assert_int_equal(mkdir(path, 0700), 0);
	settle(f);
	assert_true(opens(f, &seen));
	assert_true(seen.valid);
	/* Renamed away, and a file in its place, its times put back. */
	snprintf(path2, sizeof(path2), "%s.old", path);
	assert_int_equal(rename(path, path2), 0);
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	ts[0] = ts[1] = seen.mtim;
	assert_int_equal(utimensat(AT_FDCWD, f->root, ts, 0), 0);
	assert_false(opens(f, &seen));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rename(path2, path), 0);
	settle(f);
	assert_true(opens(f, &seen));
	assert_true(seen.valid);
	/* The root replaced by another without its states. */
	snprintf(path2, sizeof(path2), "%s.old", f->root);
	assert_int_equal(rename(f->root, path2), 0);
	assert_int_equal(mkdir(f->root, 0700), 0);
	settle(f);
	assert_false(opens(f, &seen));
	assert_int_equal(rmdir(f->root), 0);
	assert_int_equal(rename(path2, f->root), 0);
	/* Gone. */
	assert_int_equal(rename(f->root, path2), 0);
	assert_false(opens(f, &seen));
	assert_int_equal(rename(path2, f->root), 0);
	assert_true(opens(f, &seen));
}

/* A state that is a symbolic link: opens, never trusted. */
static void
test_seen_link(void **state)
{
	struct fixture		*f = *state;
	struct spool_seen	 seen;
	char			 path[256], path2[300];

	memset(&seen, 0, sizeof(seen));
	state_path(f, SPOOL_CUR, NULL, path, sizeof(path));
	snprintf(path2, sizeof(path2), "%s/cur-real", f->dir);
	assert_int_equal(rename(path, path2), 0);
	assert_int_equal(symlink(path2, path), 0);
	settle(f);
	assert_true(opens(f, &seen));
	assert_false(seen.valid);
	/* Its target gone: an error at once. */
	assert_int_equal(rmdir(path2), 0);
	assert_false(opens(f, &seen));
}

/* The identity of what fd is open on. */
static ino_t
fd_ino(int fd)
{
	struct stat	st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

/*
 * On a local file system a worker holds the root and the states its
 * requests opened: the next request borrows them (spool_free leaves
 * them open), spool_seen_release closes them, and a root replaced is
 * let go for the one now there.
 */
static void
test_seen_held(void **state)
{
	struct fixture		*f = *state;
	struct spool_seen	 seen;
	struct spool		*s;
	struct stat		 st;
	enum spool_dir		 d;
	char			 err[256], path[300], name[SPOOL_NAME_MAX];
	int			 root, newfd, fd, i;

	memset(&seen, 0, sizeof(seen));
	settle(f);
	s = spool_open_seen(f->root, &seen, err, sizeof(err));
	assert_non_null(s);
	assert_true(seen.valid);
	if (!seen.local) {
		spool_free(s);
		skip();
	}
	assert_true(seen.held);
	root = s->rootfd;
	assert_int_equal(seen.rootfd, root);
	/* A state a request opens is held with the root. */
	newfd = spool_statefd(s, SPOOL_NEW);
	assert_int_not_equal(newfd, -1);
	assert_int_equal(seen.fds[SPOOL_NEW], newfd);
	spool_free(s);
	assert_int_not_equal(fcntl(root, F_GETFD), -1);
	assert_int_not_equal(fcntl(newfd, F_GETFD), -1);
	/* The next request borrows both, and opens neither again. */
	s = spool_open_seen(f->root, &seen, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(s->rootfd, root);
	assert_int_equal(spool_statefd(s, SPOOL_NEW), newfd);
	spool_free(s);
	/* Let go: closed, what was seen still known. */
	spool_seen_release(&seen);
	assert_false(seen.held);
	assert_true(seen.valid);
	assert_int_equal(fcntl(root, F_GETFD), -1);
	assert_int_equal(fcntl(newfd, F_GETFD), -1);
	/* Held again by the next. */
	s = spool_open_seen(f->root, &seen, err, sizeof(err));
	assert_non_null(s);
	assert_true(seen.held);
	spool_free(s);
	/*
	 * The root replaced by another spool, every state in it and a
	 * message in its sent/: the one held is let go, the new one found.
	 */
	snprintf(path, sizeof(path), "%s.old", f->root);
	assert_int_equal(rename(f->root, path), 0);
	assert_int_equal(mkdir(f->root, 0700), 0);
	for (i = 0; i < SPOOL__MAX; i++) {
		snprintf(path, sizeof(path), "%s/%s", f->root,
		    spool_dirname((enum spool_dir)i));
		assert_int_equal(mkdir(path, 0700), 0);
	}
	state_path(f, SPOOL_SENT, "01ARZ3NDEKTSV4RRFFQ69G5FAV.json", path,
	    sizeof(path));
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	settle(f);
	assert_int_equal(stat(f->root, &st), 0);
	s = spool_open_seen(f->root, &seen, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(fd_ino(s->rootfd), st.st_ino);
	assert_int_equal(spool_find(s, "01ARZ3NDEKTSV4RRFFQ69G5FAV", &d, name),
	    0);
	assert_int_equal(d, SPOOL_SENT);
	spool_free(s);
	/* Trusted again once settled: held, the new root's. */
	s = spool_open_seen(f->root, &seen, err, sizeof(err));
	assert_non_null(s);
	assert_true(seen.held);
	assert_int_equal(fd_ino(seen.rootfd), st.st_ino);
	spool_free(s);
	spool_seen_release(&seen);
	snprintf(path, sizeof(path), "rm -rf '%s.old'", f->root);
	assert_int_equal(system(path), 0);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test_setup_teardown(test_seen_then_removed,
		    setup_spool, teardown),
		cmocka_unit_test_setup_teardown(test_seen_link, setup_spool,
		    teardown),
		cmocka_unit_test_setup_teardown(test_seen_held, setup_spool,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
