/*
 * testutil.c: the fixture, file and keys file helpers of the unit tests.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "content/keys.h"
#include "spool/spool.h"
#include "testutil.h"

#define READ_MAX	65536

int
tu_mkdtemp(char *dir, size_t len, const char *name)
{
	int	n;

	n = snprintf(dir, len, "/tmp/msgspool-test-%s-XXXXXX", name);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
tu_rmtree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void *
tu_fixture_new(size_t size, const char *name)
{
	char	*f;

	if (size < TU_DIR_SIZE || (f = calloc(1, size)) == NULL)
		return NULL;
	if (tu_mkdtemp(f, TU_DIR_SIZE, name) == -1) {
		free(f);
		return NULL;
	}
	return f;
}

void
tu_fixture_free(void *f)
{
	if (f == NULL)
		return;
	tu_rmtree(f);
	free(f);
}

int
tu_teardown(void **state)
{
	tu_fixture_free(*state);
	*state = NULL;
	return 0;
}

void
tu_key_line(char *out, size_t len, const char *client, const char *key,
    const char *scopes, const char *suffix)
{
	char	hex[KEY_HASH_HEX + 1];

	keys_hash_hex(key, strlen(key), hex);
	snprintf(out, len, "%s:%s:%s%s\n", client, hex, scopes, suffix);
}

void
tu_write_file(const char *path, const void *data, size_t len)
{
	int	fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

void
tu_write_text(const char *path, const char *text)
{
	tu_write_file(path, text, strlen(text));
}

size_t
tu_spool_entries(const struct tu_spool *f, const char *state)
{
	char		 path[512];
	DIR		*d;
	struct dirent	*de;
	size_t		 n = 0;

	snprintf(path, sizeof(path), "%s/%s", f->dir, state);
	assert_non_null(d = opendir(path));
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

char *
tu_read_text(const char *path)
{
	FILE	*fp;
	char	*buf;
	size_t	 n;

	fp = fopen(path, "r");
	assert_non_null(fp);
	buf = calloc(1, READ_MAX);
	assert_non_null(buf);
	n = fread(buf, 1, READ_MAX - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

char *
tu_read_fd(int fd, size_t *lenp)
{
	char	*buf = NULL, *nb;
	size_t	 len = 0, cap = 0;
	ssize_t	 n;

	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			assert_non_null(nb);
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n == -1 && errno == EINTR)
			continue;
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (buf == NULL) {
		buf = malloc(1);
		assert_non_null(buf);
	}
	buf[len] = '\0';
	*lenp = len;
	return buf;
}

int
tu_spool_setup(void **state)
{
	struct tu_spool	*f;
	char		 err[256];

	if ((f = tu_fixture_new(sizeof(*f), "spool")) == NULL)
		return -1;
	if ((f->sp = spool_open(f->dir, 1, err, sizeof(err))) == NULL) {
		print_error("spool_open: %s\n", err);
		tu_fixture_free(f);
		return -1;
	}
	*state = f;
	return 0;
}

int
tu_spool_setup_installed(void **state)
{
	struct tu_spool	*f;
	char		 path[512];

	if (tu_spool_setup(state) == -1)
		return -1;
	f = *state;
	snprintf(path, sizeof(path), "%s/new", f->dir);
	return chmod(path, 02770);
}

int
tu_spool_teardown(void **state)
{
	struct tu_spool	*f = *state;

	spool_free(f->sp);
	tu_fixture_free(f);
	return 0;
}
