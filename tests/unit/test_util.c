/*
 * test_util.c: unit tests for lib/base/util.c.
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

#include "base/util.h"

static void
test_seterr_formats(void **state)
{
	char	err[16];

	(void)state;
	util_seterr(err, sizeof(err), "%s:%d: %s", "f.conf", 12, "bad");
	assert_string_equal(err, "f.conf:12: bad");
	/* Truncated, never overrun. */
	util_seterr(err, sizeof(err), "%s", "0123456789abcdefghij");
	assert_string_equal(err, "0123456789abcde");
}

static void
test_seterr_no_buffer(void **state)
{
	char	err[4] = "xyz";

	(void)state;
	util_seterr(NULL, 10, "ignored %d", 1);
	util_seterr(err, 0, "ignored %d", 2);
	assert_string_equal(err, "xyz");
}

static void
test_write_all_through_a_pipe(void **state)
{
	char	*big, *back;
	size_t	 len = 1 << 20, got = 0;
	ssize_t	 n;
	int	 p[2];
	pid_t	 pid;

	(void)state;
	/* More than a pipe holds, so the writes are short and resumed. */
	assert_int_equal(pipe(p), 0);
	big = malloc(len);
	back = malloc(len);
	assert_non_null(big);
	assert_non_null(back);
	for (size_t i = 0; i < len; i++)
		big[i] = (char)(i * 7);
	if ((pid = fork()) == 0) {
		close(p[0]);
		_exit(util_write_all(p[1], big, len) == 0 ? 0 : 1);
	}
	close(p[1]);
	while ((n = read(p[0], back + got, len - got)) > 0)
		got += (size_t)n;
	close(p[0]);
	assert_int_equal(got, len);
	assert_memory_equal(big, back, len);
	free(big);
	free(back);
}

static void
test_write_all_error(void **state)
{
	int	p[2];

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(util_write_all(p[1], "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	close(p[1]);
	assert_int_equal(util_write_all(-1, "x", 1), -1);
	assert_int_equal(errno, EBADF);
}

static void
test_hexval(void **state)
{
	(void)state;
	assert_int_equal(util_hexval('0'), 0);
	assert_int_equal(util_hexval('9'), 9);
	assert_int_equal(util_hexval('a'), 10);
	assert_int_equal(util_hexval('F'), 15);
	assert_int_equal(util_hexval('g'), -1);
	assert_int_equal(util_hexval('%'), -1);
	assert_int_equal(util_hexval(0), -1);
	assert_int_equal(util_hexval(0xc3), -1);
}

static void
test_same_file(void **state)
{
	char		 path[] = "/tmp/msgspool-test-util-XXXXXX";
	struct stat	 a, b;
	struct timespec	 ts[2];
	int		 fd;

	(void)state;
	assert_true((fd = mkstemp(path)) != -1);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(util_same_file(&a, &b));
	/* A write changes the size and times. */
	assert_int_equal(write(fd, "x", 1), 1);
	assert_int_equal(fstat(fd, &b), 0);
	assert_false(util_same_file(&a, &b));
	/* The same size, another time. */
	assert_int_equal(fstat(fd, &a), 0);
	ts[0].tv_sec = ts[1].tv_sec = 1000000000;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(futimens(fd, ts), 0);
	assert_int_equal(fstat(fd, &b), 0);
	assert_false(util_same_file(&a, &b));
	close(fd);
	unlink(path);
}

static void
test_read_all(void **state)
{
	char	 path[] = "/tmp/msgspool-test-util-XXXXXX";
	char	*big, *out;
	size_t	 len, i;
	int	 fd, p[2];

	(void)state;
	assert_true((fd = mkstemp(path)) != -1);
	/* Empty: an empty string. */
	assert_int_equal(util_read_all(fd, 10, &out, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(out, "");
	free(out);
	/* Larger than the first guess, NULs kept, terminated. */
	assert_non_null(big = malloc(10000));
	for (i = 0; i < 10000; i++)
		big[i] = (char)(i % 7);
	assert_int_equal(util_write_all(fd, big, 10000), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(util_read_all(fd, 10000, &out, &len), 0);
	assert_int_equal(len, 10000);
	assert_memory_equal(out, big, 10000);
	assert_int_equal(out[10000], '\0');
	free(out);
	/* One byte over the limit: EFBIG, nothing to free. */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(util_read_all(fd, 9999, &out, &len), -1);
	assert_int_equal(errno, EFBIG);
	close(fd);
	unlink(path);
	free(big);
	/* A pipe has no size: read to its end. */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(util_write_all(p[1], "abc", 3), 0);
	close(p[1]);
	assert_int_equal(util_read_all(p[0], 100, &out, &len), 0);
	assert_int_equal(len, 3);
	assert_string_equal(out, "abc");
	free(out);
	close(p[0]);
	/* A bad descriptor: its errno. */
	assert_int_equal(util_read_all(-1, 100, &out, &len), -1);
	assert_int_equal(errno, EBADF);
}

/*
 * util_read_sized trusts the size it is given for its first read only:
 * a file grown since its fstat is still read whole, one shrunk ends
 * where it ends, max still bounds it; size -1 reads anything to its
 * end.  And
 * util_open_regular_st gives the fstat it made.
 */
static void
test_read_sized(void **state)
{
	char		 path[] = "/tmp/msgspool-test-util-XXXXXX";
	char		*out;
	struct stat	 st;
	size_t		 len;
	int		 fd, p[2];

	(void)state;
	assert_true((fd = mkstemp(path)) != -1);
	assert_int_equal(util_write_all(fd, "0123456789", 10), 0);
	close(fd);
	fd = util_open_regular_st(AT_FDCWD, path, 1, &st);
	assert_int_not_equal(fd, -1);
	assert_int_equal(st.st_size, 10);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(util_read_sized(fd, 10, 100, &out, &len), 0);
	assert_int_equal(len, 10);
	free(out);
	/* Said smaller (grown since its fstat): read whole. */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(util_read_sized(fd, 5, 100, &out, &len), 0);
	assert_int_equal(len, 10);
	assert_string_equal(out, "0123456789");
	free(out);
	/* Said larger than it is: what there is. */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(util_read_sized(fd, 50, 100, &out, &len), 0);
	assert_int_equal(len, 10);
	free(out);
	/* Past max, whatever the size said: EFBIG. */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(util_read_sized(fd, 2, 9, &out, &len), -1);
	assert_int_equal(errno, EFBIG);
	close(fd);
	/* A directory is no regular file. */
	errno = 0;
	assert_int_equal(util_open_regular_st(AT_FDCWD, "/tmp", 1, &st), -1);
	assert_int_equal(errno, EINVAL);
	unlink(path);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(util_write_all(p[1], "abc", 3), 0);
	close(p[1]);
	assert_int_equal(util_read_sized(p[0], -1, 100, &out, &len), 0);
	assert_int_equal(len, 3);
	assert_string_equal(out, "abc");
	free(out);
	close(p[0]);
}

/* How many names dir has besides "f" (its temporary files). */
static int
beside(const char *dir)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	assert_non_null(d = opendir(dir));
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, "f") != 0;
	closedir(d);
	return n;
}

static void
test_replace_file_new_and_old(void **state)
{
	char		 dir[] = "/tmp/msgspool-test-util-XXXXXX", path[64];
	char		 err[256], *out;
	struct stat	 st;
	size_t		 len;
	mode_t		 mask;
	int		 fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	/* None before: newmode less the umask, the caller's. */
	mask = umask(027);
	assert_int_equal(util_replace_file(path, "one\n", 4, 0664, err,
	    sizeof(err)), 0);
	umask(mask);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_uid, geteuid());
	/* An old one: its mode kept, whatever newmode and the umask say. */
	assert_int_equal(chmod(path, 0604), 0);
	assert_int_equal(util_replace_file(path, "two\n", 4, 0600, err,
	    sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0604);
	assert_true((fd = open(path, O_RDONLY)) != -1);
	assert_int_equal(util_read_all(fd, 100, &out, &len), 0);
	assert_string_equal(out, "two\n");
	free(out);
	close(fd);
	/* And its owner, where the caller may give it (root). */
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(util_replace_file(path, "three\n", 6, 0600,
		    err, sizeof(err)), 0);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_gid, 65534);
		assert_int_equal(st.st_mode & 07777, 0604);
	}
	assert_int_equal(beside(dir), 0);
	/* Not a regular file: refused. */
	assert_int_equal(util_replace_file(dir, "x", 1, 0600, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	unlink(path);
	rmdir(dir);
}

/*
 * As a user who may write the file and its directory but not give a
 * file to the old one's owner (root): refused, the old file as it was,
 * nothing left beside it.  Needs root to set it up.
 */
static void
test_replace_file_refuses_another_owner(void **state)
{
	char		 dir[] = "/tmp/msgspool-test-util-XXXXXX", path[64];
	char		 err[256];
	struct stat	 a, b;
	pid_t		 pid;
	int		 fd, status;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chown(dir, 65534, 65534), 0);
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0660)) != -1);
	assert_int_equal(write(fd, "old\n", 4), 4);
	close(fd);
	assert_int_equal(chown(path, 0, 65534), 0);
	assert_int_equal(chmod(path, 0660), 0);
	assert_int_equal(stat(path, &a), 0);
	assert_true((pid = fork()) != -1);
	if (pid == 0) {
		if (setgid(65534) == -1 || setuid(65534) == -1)
			_exit(2);
		if (util_replace_file(path, "new\n", 4, 0600, err,
		    sizeof(err)) != -1 || errno != EPERM ||
		    strstr(err, "owner") == NULL || strchr(err, '\n') != NULL)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(b.st_size, 4);
	assert_int_equal(beside(dir), 0);
	unlink(path);
	rmdir(dir);
}

/* Whether fd sees a lock of the whole file held by another description. */
static int
locked_elsewhere(int fd)
{
	struct flock	fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	assert_int_equal(fcntl(fd, F_OFD_GETLK, &fl), 0);
	return fl.l_type != F_UNLCK;
}

/*
 * util_lock_range: a lock of one open file description excludes another
 * of the same process (threads share the process), and a close of a
 * third descriptor of the file does not let it go.
 */
static void
test_lock_range(void **state)
{
	char	dir[] = "/tmp/msgspool-test-util-XXXXXX", path[64];
	int	a, b, c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lock", dir);
	assert_true((a = open(path, O_RDWR | O_CREAT, 0600)) != -1);
	assert_true((b = open(path, O_RDWR)) != -1);
	assert_false(locked_elsewhere(b));
	assert_int_equal(util_lock_range(a, F_WRLCK, 0, 0), 0);
	assert_true(locked_elsewhere(b));
	assert_true((c = open(path, O_RDWR)) != -1);
	close(c);
	assert_true(locked_elsewhere(b));
	assert_int_equal(util_lock_range(a, F_UNLCK, 0, 0), 0);
	assert_false(locked_elsewhere(b));
	/* A range: byte 3 alone, byte 4 free. */
	assert_int_equal(util_lock_range(a, F_WRLCK, 3, 1), 0);
	assert_int_equal(util_lock_range(b, F_WRLCK, 4, 1), 0);
	assert_int_equal(util_lock_range(b, F_UNLCK, 4, 1), 0);
	assert_int_equal(util_lock_range(a, F_UNLCK, 3, 1), 0);
	assert_int_equal(util_lock_range(-1, F_WRLCK, 0, 0), -1);
	assert_int_equal(errno, EBADF);
	close(a);
	close(b);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seterr_formats),
		cmocka_unit_test(test_seterr_no_buffer),
		cmocka_unit_test(test_write_all_through_a_pipe),
		cmocka_unit_test(test_write_all_error),
		cmocka_unit_test(test_hexval),
		cmocka_unit_test(test_same_file),
		cmocka_unit_test(test_lock_range),
		cmocka_unit_test(test_read_all),
		cmocka_unit_test(test_read_sized),
		cmocka_unit_test(test_replace_file_new_and_old),
		cmocka_unit_test(test_replace_file_refuses_another_owner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
