/*
 * buf.c: a growable byte buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

int
buf_reserve(struct buf *b, size_t len)
{
	char	*p;
	size_t	 cap;

	if (b->failed)
		return -1;
	if (b->len + len + 1 > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < b->len + len + 1)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL) {
			b->failed = 1;
			return -1;
		}
		b->p = p;
		b->cap = cap;
		b->p[b->len] = '\0';
	}
	return 0;
}

int
buf_add(struct buf *b, const char *s, size_t len)
{
	if (buf_reserve(b, len) == -1)
		return -1;
	if (len > 0)
		memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

int
buf_puts(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int
buf_putc(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

/*
 * jansson writes a text in many small pieces: each is copied where
 * there is room, the NUL put once at the end (buf_json).
 */
static int
json_put(const char *s, size_t len, void *arg)
{
	struct buf	*b = arg;

	if (b->cap - b->len > len) {
		memcpy(b->p + b->len, s, len);
		b->len += len;
		return 0;
	}
	return buf_add(b, s, len);
}

int
buf_json(struct buf *b, const json_t *value, size_t flags)
{
	int	rc;

	if (b->failed)
		return -1;
	rc = json_dump_callback(value, json_put, b, flags);
	if (b->p != NULL)
		b->p[b->len] = '\0';
	return rc == 0 && !b->failed ? 0 : -1;
}

char *
buf_json_text(const json_t *value, size_t flags, size_t *len)
{
	struct buf	 b = { 0 };

	if (buf_json(&b, value, flags) == -1) {
		buf_free(&b);
		return NULL;
	}
	return buf_take(&b, len);
}

void
buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

char *
buf_take(struct buf *b, size_t *len)
{
	char	*p;

	if (b->failed || (b->p == NULL && buf_add(b, "", 0) == -1)) {
		buf_free(b);
		return NULL;
	}
	p = b->p;
	if (len != NULL)
		*len = b->len;
	memset(b, 0, sizeof(*b));
	return p;
}
