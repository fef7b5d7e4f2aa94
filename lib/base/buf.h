/*
 * buf.h: a growable byte buffer, always NUL-terminated.
 */
#ifndef BUF_H
#define BUF_H

#include <stddef.h>

struct buf {
	char	*p;
	size_t	 len;
	size_t	 cap;
	int	 failed;	/* an allocation failed; p may be short */
};

/* Append len bytes; on failure sets failed and returns -1. */
int	buf_add(struct buf *, const char *, size_t);
int	buf_puts(struct buf *, const char *);
int	buf_putc(struct buf *, char);
/*
 * Room for len more bytes, so that appends up to them move nothing; 0,
 * or -1 (failed set) on failure.
 */
int	buf_reserve(struct buf *, size_t len);
/* Release the memory; the struct can be reused after. */
void	buf_free(struct buf *);
/* Hand the string over (caller frees); NULL if an allocation failed. */
char	*buf_take(struct buf *, size_t *len);

#endif
