/*
 * testutil.h: what the unit tests share: a scratch directory and small
 * file helpers that fail the running test on error (cmocka asserts).
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

/* Write len bytes (text: the string) to path, mode 0600, truncating. */
void	 tu_write_file(const char *path, const void *data, size_t len);
void	 tu_write_text(const char *path, const char *text);

/* The file at path, NUL-terminated (at most 64 KiB); free it. */
char	*tu_read_text(const char *path);

#endif
