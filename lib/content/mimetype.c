/*
 * mimetype.c: content type detection with libmagic.
 */
#include <stdio.h>
#include <stdlib.h>

#include <magic.h>

#include "content/mimetype.h"

struct mimetype {
	magic_t	cookie;
};

struct mimetype *
mimetype_new(char *err, size_t errlen)
{
	struct mimetype	*m;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* Types only; no decompression, no following of anything. */
	/* Never look inside compressed data: no zip bombs. */
	if ((m->cookie = magic_open(MAGIC_MIME_TYPE | MAGIC_ERROR |
	    MAGIC_NO_CHECK_COMPRESS)) == NULL ||
	    magic_load(m->cookie, NULL) == -1) {
		snprintf(err, errlen, "libmagic: %s", m->cookie ?
		    magic_error(m->cookie) : "cannot open");
		mimetype_free(m);
		return NULL;
	}
	return m;
}

void
mimetype_free(struct mimetype *m)
{
	if (m == NULL)
		return;
	if (m->cookie != NULL)
		magic_close(m->cookie);
	free(m);
}

void
mimetype_detect(struct mimetype *m, const void *p, size_t len, char *out,
    size_t outlen)
{
	const char	*t;

	t = len > 0 ? magic_buffer(m->cookie, p, len) : NULL;
	snprintf(out, outlen, "%s", t != NULL ? t : "application/octet-stream");
}
