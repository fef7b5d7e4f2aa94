/*
 * mimetype.h: MIME types detected from content with libmagic.  Only the
 * programs that take attachments link this (and libmagic): loading the
 * magic database costs every request that links it.
 */
#ifndef MIMETYPE_H
#define MIMETYPE_H

#include <stddef.h>

struct mimetype;

/* Open libmagic; NULL with a reason in err.  Free with mimetype_free. */
struct mimetype	*mimetype_new(char *err, size_t errlen);
void		 mimetype_free(struct mimetype *);

/*
 * The MIME type of len bytes ("application/pdf") into out; when
 * libmagic cannot tell, "application/octet-stream".
 */
void		 mimetype_detect(struct mimetype *, const void *p, size_t len,
		    char *out, size_t outlen);

#endif
