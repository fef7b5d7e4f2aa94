/*
 * test_dsync.c: group commit of the spool's directory syncs
 * (lib/spool/dsync.c): the host's record, its counts after many
 * processes queued at once, a record that is not ours, a writer that
 * dies holding the lock, a record kept between requests, and the file
 * system's syncs of sync = filesystem (msgspool.conf(5)).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/netfs.h"
#include "spool/dsync.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "testutil.h"

/* The record's layout (dsync.c): a magic number, then two counts each. */
struct rec {
	uint64_t	magic;
	uint64_t	renamed[16];
	uint64_t	synced[16];
	uint64_t	syncs[16];
};

#define MAGIC	0x6d7364736e633032ULL

static void
rec_path(const struct tu_spool *f, char *buf, size_t len)
{
	char	host[NETFS_HOST_MAX + 1];

	snprintf(buf, len, "%s/sync/%s", f->dir,
	    netfs_hostname(host, sizeof(host)));
}

static int
rec_read(const struct tu_spool *f, struct rec *r)
{
	char	path[512];
	int	fd;
	ssize_t	n;

	rec_path(f, path, sizeof(path));
	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	n = read(fd, r, sizeof(*r));
	close(fd);
	return n == (ssize_t)sizeof(*r) ? 0 : -1;
}

static enum msg_status
queue_one(struct spool *sp)
{
	char		id[ULID_LEN + 1];
	json_t		*d;
	enum msg_status	 st;

	assert_int_equal(ulid_new(id), 0);
	d = msgdoc_new(id, "sms", "acme", 0, json_pack("{s:s,s:s}", "to",
	    "+4915112345678", "body", "hi"));
	st = spool_enqueue(sp, d, SPOOL_NEW);
	json_decref(d);
	return st;
}

static void
test_record_counts_one(void **state)
{
	struct tu_spool	*f = *state;
	struct rec	 r;
	struct stat	 st;
	char		 path[512];

	assert_int_equal(queue_one(f->sp), MSG_OK);
	rec_path(f, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	/* Shared by the web server's programs and msgspoold. */
	assert_int_equal(st.st_mode & 0777, 0660);
	assert_int_equal(st.st_size, sizeof(r));
	assert_int_equal(rec_read(f, &r), 0);
	assert_true(r.magic == MAGIC);
	assert_int_equal(r.renamed[SPOOL_NEW], 1);
	assert_int_equal(r.synced[SPOOL_NEW], 1);
	assert_int_equal(r.syncs[SPOOL_NEW], 1);
	assert_int_equal(r.renamed[SPOOL_DEFERRED], 0);
	assert_int_equal(tu_spool_entries(f, "new"), 1);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
}

/*
 * Processes queueing at once: every message there, and at the end every
 * counted rename synced (the last to count waited for a sync begun after
 * it).
 */
static void
test_many_processes(void **state)
{
	struct tu_spool	*f = *state;
	struct rec	 r;
	char		 err[256];
	pid_t		 kids[6];
	int		 i, j, status;

	for (i = 0; i < 6; i++) {
		if ((kids[i] = fork()) == 0) {
			struct spool	*sp;

			sp = spool_open(spool_root(f->sp), 0, err,
			    sizeof(err));
			for (j = 0; sp != NULL && j < 50; j++)
				if (queue_one(sp) != MSG_OK)
					_exit(2);
			spool_free(sp);
			_exit(sp == NULL ? 3 : 0);
		}
		assert_true(kids[i] > 0);
	}
	for (i = 0; i < 6; i++) {
		assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(tu_spool_entries(f, "new"), 300);
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[SPOOL_NEW], 300);
	assert_int_equal(r.synced[SPOOL_NEW], 300);
	/* Shared: never more syncs than renames. */
	assert_true(r.syncs[SPOOL_NEW] >= 1 && r.syncs[SPOOL_NEW] <= 300);
}

/* A record not made by us is left alone: the directory synced alone. */
static void
test_foreign_record_left_alone(void **state)
{
	struct tu_spool	*f = *state;
	struct rec	 r, back;
	char		 path[512];

	snprintf(path, sizeof(path), "%s/sync", f->dir);
	assert_int_equal(mkdir(path, 0770), 0);
	memset(&r, 0x5a, sizeof(r));
	rec_path(f, path, sizeof(path));
	tu_write_file(path, &r, sizeof(r));
	assert_int_equal(queue_one(f->sp), MSG_OK);
	assert_int_equal(rec_read(f, &back), 0);
	assert_memory_equal(&r, &back, sizeof(r));
	assert_int_equal(tu_spool_entries(f, "new"), 1);
}

/* Whether process pid is in fcntl(2) (x86_64 72; elsewhere: it runs). */
static int
in_fcntl(pid_t pid)
{
#if defined(__x86_64__)
	char	 path[64], buf[64];
	FILE	*fp;
	int	 nr = -1;

	snprintf(path, sizeof(path), "/proc/%ld/syscall", (long)pid);
	if ((fp = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), fp) != NULL)
		nr = atoi(buf);
	fclose(fp);
	return nr == 72;
#else
	(void)pid;
	return 1;
#endif
}

/*
 * The writer dies holding the lock (a process stopped in its sync, then
 * killed): the one waiting takes the lock and syncs for itself.
 */
static void
test_writer_dies(void **state)
{
	struct tu_spool	*f = *state;
	struct flock	 fl;
	struct rec	 r;
	char		 path[512], err[256];
	pid_t		 holder, waiter;
	int		 p[2], fd, status, i;
	char		 c;

	assert_int_equal(queue_one(f->sp), MSG_OK);	/* the record */
	assert_int_equal(pipe(p), 0);
	rec_path(f, path, sizeof(path));
	if ((holder = fork()) == 0) {
		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = SPOOL_NEW;
		fl.l_len = 1;
		if ((fd = open(path, O_RDWR)) == -1 ||
		    fcntl(fd, F_SETLKW, &fl) == -1)
			_exit(1);
		(void)write(p[1], "x", 1);
		for (;;)
			pause();
	}
	assert_int_equal(read(p[0], &c, 1), 1);
	if ((waiter = fork()) == 0) {
		struct spool	*sp;

		sp = spool_open(spool_root(f->sp), 0, err, sizeof(err));
		_exit(sp != NULL && queue_one(sp) == MSG_OK ? 0 : 2);
	}
	/* It waits for the lock: seen in fcntl(2), within a bound. */
	for (i = 0; i < 5000 && !in_fcntl(waiter); i++) {
		assert_int_equal(waitpid(waiter, &status, WNOHANG), 0);
		usleep(1000);	/* a poll interval, not the wait */
	}
	assert_true(in_fcntl(waiter));
	assert_int_equal(kill(holder, SIGKILL), 0);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	assert_int_equal(waitpid(waiter, &status, 0), waiter);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(tu_spool_entries(f, "new"), 2);
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[SPOOL_NEW], 2);
	assert_int_equal(r.synced[SPOOL_NEW], 2);
	close(p[0]);
	close(p[1]);
}

/* A rename another's sync covered: no sync, nothing recorded as synced. */
static void
test_covered_needs_no_sync(void **state)
{
	struct tu_spool	*f = *state;
	struct rec	 r;
	char		 path[512];
	int		 fd;

	assert_int_equal(queue_one(f->sp), MSG_OK);
	rec_path(f, path, sizeof(path));
	assert_int_equal(rec_read(f, &r), 0);
	/* As if a writer had synced ahead of the counts. */
	r.synced[SPOOL_NEW] = 100;
	assert_true((fd = open(path, O_WRONLY)) != -1);
	assert_int_equal(pwrite(fd, &r, sizeof(r), 0), sizeof(r));
	close(fd);
	assert_int_equal(spool_syncdir(f->sp, SPOOL_NEW), 0);
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[SPOOL_NEW], 2);
	assert_int_equal(r.synced[SPOOL_NEW], 100);
	assert_int_equal(r.syncs[SPOOL_NEW], 1);
}

/*
 * A record kept between spools (spool_keep): the same mapping while
 * sync/HOST is that file; another put in its place is mapped and counts
 * from then on, the old one no more.
 */
static void
test_kept_while_same_file(void **state)
{
	struct tu_spool		*f = *state;
	struct spool_keep	 keep = { 0 };
	struct spool		*sp;
	struct dsync		*first;
	struct rec		 r;
	char			 path[512], err[256];
	int			 i;

	for (i = 0; i < 3; i++) {
		assert_non_null(sp = spool_open(f->dir, 0, err, sizeof(err)));
		spool_lend(sp, &keep);
		assert_int_equal(queue_one(sp), MSG_OK);
		if (i == 0)
			first = keep.dsync;
		assert_non_null(keep.dsync);
		assert_ptr_equal(keep.dsync, first);
		assert_ptr_equal(sp->dsync, keep.dsync);
		spool_free(sp);
	}
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[SPOOL_NEW], 3);
	assert_int_equal(r.synced[SPOOL_NEW], 3);
	/* Removed: the next request makes and maps a new one. */
	rec_path(f, path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_non_null(sp = spool_open(f->dir, 0, err, sizeof(err)));
	spool_lend(sp, &keep);
	assert_int_equal(queue_one(sp), MSG_OK);
	spool_free(sp);
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[SPOOL_NEW], 1);
	assert_int_equal(r.synced[SPOOL_NEW], 1);
	assert_int_equal(tu_spool_entries(f, "new"), 4);
	spool_keep_free(&keep);
	assert_null(keep.dsync);
	spool_keep_free(&keep);
}

/* msgspool.conf(5), sync: the two values, and nothing else. */
static void
test_sync_parse(void **state)
{
	enum spool_sync	how = SPOOL_SYNC_FS;

	(void)state;
	assert_int_equal(spool_sync_parse(NULL, &how), 0);
	assert_int_equal(how, SPOOL_SYNC_FILE);
	assert_int_equal(spool_sync_parse("filesystem", &how), 0);
	assert_int_equal(how, SPOOL_SYNC_FS);
	assert_int_equal(spool_sync_parse("file", &how), 0);
	assert_int_equal(how, SPOOL_SYNC_FILE);
	assert_int_equal(spool_sync_parse("fs", &how), -1);
	assert_int_equal(spool_sync_parse("", &how), -1);
	assert_int_equal(spool_sync_parse("Filesystem", &how), -1);
}

/* Commit n new SMS at once through sp: how many were queued. */
static size_t
commit_many(struct spool *sp, size_t n)
{
	struct spool_item	 it[64];
	json_t			*d[64];
	char			 id[ULID_LEN + 1];
	size_t			 i, ok;

	assert_true(n <= 64);
	for (i = 0; i < n; i++) {
		assert_int_equal(ulid_new(id), 0);
		d[i] = msgdoc_new(id, "sms", "acme", 0, json_pack("{s:s,s:s}",
		    "to", "+4915112345678", "body", "hi"));
		it[i].doc = d[i];
		it[i].dir = SPOOL_NEW;
		it[i].name = NULL;
		it[i].from = SPOOL__MAX;
	}
	ok = spool_commit(sp, it, n);
	for (i = 0; i < n; i++)
		json_decref(d[i]);
	return ok;
}

#define FS	15	/* the record's slot of the file system's syncs */

/*
 * sync = filesystem: a commit of many files syncs the file system once
 * for the files and once for their names, and syncs no directory; a
 * smaller one syncs as under file.
 */
static void
test_filesystem_many(void **state)
{
	struct tu_spool	*f = *state;
	struct rec	 r;

	spool_sync_set(f->sp, SPOOL_SYNC_FS);
	assert_int_equal(commit_many(f->sp, SPOOL_SYNCFS_MIN),
	    SPOOL_SYNCFS_MIN);
	assert_int_equal(tu_spool_entries(f, "new"), SPOOL_SYNCFS_MIN);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[FS], 2);
	assert_int_equal(r.synced[FS], 2);
	assert_int_equal(r.syncs[FS], 2);
	assert_int_equal(r.renamed[SPOOL_NEW], 0);
	/* One less: each file synced, new/ once. */
	assert_int_equal(commit_many(f->sp, SPOOL_SYNCFS_MIN - 1),
	    SPOOL_SYNCFS_MIN - 1);
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[FS], 2);
	assert_int_equal(r.renamed[SPOOL_NEW], 1);
	assert_int_equal(r.synced[SPOOL_NEW], 1);
	assert_int_equal(tu_spool_entries(f, "new"), 2 * SPOOL_SYNCFS_MIN - 1);
}

/*
 * Processes committing batches at once under sync = filesystem: every
 * file there, and every counted write and rename synced, by no more
 * syncs than there were.
 */
static void
test_filesystem_many_processes(void **state)
{
	struct tu_spool	*f = *state;
	struct rec	 r;
	char		 err[256];
	pid_t		 kids[4];
	int		 i, j, status;

	for (i = 0; i < 4; i++) {
		if ((kids[i] = fork()) == 0) {
			struct spool	*sp;

			sp = spool_open(spool_root(f->sp), 0, err,
			    sizeof(err));
			if (sp != NULL)
				spool_sync_set(sp, SPOOL_SYNC_FS);
			for (j = 0; sp != NULL && j < 5; j++)
				if (commit_many(sp, 20) != 20)
					_exit(2);
			spool_free(sp);
			_exit(sp == NULL ? 3 : 0);
		}
		assert_true(kids[i] > 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(tu_spool_entries(f, "new"), 400);
	assert_int_equal(tu_spool_entries(f, "tmp"), 0);
	assert_int_equal(rec_read(f, &r), 0);
	assert_int_equal(r.renamed[FS], 40);
	assert_int_equal(r.synced[FS], 40);
	assert_true(r.syncs[FS] >= 1 && r.syncs[FS] <= 40);
	assert_int_equal(r.renamed[SPOOL_NEW], 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_record_counts_one,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_many_processes,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_foreign_record_left_alone,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_writer_dies,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_covered_needs_no_sync,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_kept_while_same_file,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test(test_sync_parse),
		cmocka_unit_test_setup_teardown(test_filesystem_many,
		    tu_spool_setup, tu_spool_teardown),
		cmocka_unit_test_setup_teardown(test_filesystem_many_processes,
		    tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
