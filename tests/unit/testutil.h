/*
 * testutil.h: what the unit tests share: a fixture with a scratch
 * directory, small file helpers that fail the running test on error
 * (cmocka asserts), and the lines of a keys file.
 */
#ifndef MSGSPOOL_TESTUTIL_H
#define MSGSPOOL_TESTUTIL_H

#include <stddef.h>

/*
 * Make a fresh directory /tmp/msgspool-test-NAME-XXXXXX and put its path
 * in dir.  0, or -1 (for a setup function to return).
 */
int	 tu_mkdtemp(char *dir, size_t len, const char *name);

/* Remove dir and everything below it, without following links. */
void	 tu_rmtree(const char *dir);

/*
 * A test fixture is a struct whose first member is char dir[TU_DIR_SIZE],
 * the scratch directory; a bare char[TU_DIR_SIZE] is the smallest one.
 * tu_fixture_new allocates size bytes of zeroes and makes the directory
 * (tu_mkdtemp), or returns NULL.  tu_fixture_free removes the directory
 * and frees the fixture; tu_teardown does that to *state, as a cmocka
 * teardown.
 */
#define TU_DIR_SIZE	64

void	*tu_fixture_new(size_t size, const char *name);
void	 tu_fixture_free(void *f);
int	 tu_teardown(void **state);

/*
 * A line of a keys file: "client:" the SHA-256 of key in hex ":scopes",
 * then suffix (":disabled" or ""), then a newline.
 */
void	 tu_key_line(char *out, size_t len, const char *client,
	    const char *key, const char *scopes, const char *suffix);

/*
 * The fixture of the tests that need a spool: a scratch directory with
 * a spool made in it (spool_open with create).  tu_spool_setup and
 * tu_spool_teardown are cmocka setup and teardown functions.
 */
struct spool;
struct tu_spool {
	char		 dir[TU_DIR_SIZE];
	struct spool	*sp;
};

int	 tu_spool_setup(void **state);
int	 tu_spool_teardown(void **state);
/* tu_spool_setup with new/ as make install makes it (mode 2770: the web
 * server's group's), whose mode and group the spool's areas copy. */
int	 tu_spool_setup_installed(void **state);

/* Write len bytes (text: the string) to path, mode 0600, truncating. */
void	 tu_write_file(const char *path, const void *data, size_t len);
void	 tu_write_text(const char *path, const char *text);

/* The entries of f's spool directory state ("new"), "." and ".." not. */
size_t	 tu_spool_entries(const struct tu_spool *f, const char *state);

/* The file at path, NUL-terminated (at most 64 KiB); free it. */
char	*tu_read_text(const char *path);

/*
 * All of fd up to end of file, NUL-terminated, its length in *lenp;
 * free it.
 */
char	*tu_read_fd(int fd, size_t *lenp);

#endif
