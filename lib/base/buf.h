/*
 * buf.h: a growable byte buffer, always NUL-terminated.
 */
#ifndef BUF_H
#define BUF_H

#include <stddef.h>

#include <jansson.h>

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
/*
 * Append the JSON text of value, byte for byte what json_dumps(value,
 * flags) gives, written by jansson (json_dump_callback) straight into
 * the buffer: no text of jansson's to grow, copy and free.  0, or -1
 * (failed set when out of memory; the buffer may then hold part of it).
 */
int	buf_json(struct buf *, const json_t *value, size_t flags);
/*
 * json_dumps(value, flags) as buf_json writes it: the text malloc'd (the
 * caller frees it with free(), whatever allocator jansson has), its
 * length in *len when len is not NULL.  NULL on failure.
 */
char	*buf_json_text(const json_t *value, size_t flags, size_t *len);
/* Hand the string over (caller frees); NULL if an allocation failed. */
char	*buf_take(struct buf *, size_t *len);

#endif
