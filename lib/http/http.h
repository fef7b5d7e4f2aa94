/*
 * http.h: an HTTP response as a value, and its CGI form.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>
#include <jansson.h>

#include "base/buf.h"

struct header {
	char	*name;
	char	*value;
};

struct response {
	int		 status;
	char		*content_type;
	struct header	*headers;
	size_t		 nheaders;
	char		*body;
	size_t		 body_len;
};

/* The reason phrase of an HTTP status ("Bad Request"), "" if unknown. */
const char	*http_reason(int status);

/*
 * New responses.  A NULL content_type is none (a 204's: rendered without
 * Content-Type, and a 204 without Content-Length).  response_json takes
 * a JSON value (stealing the reference) and serialises it.  NULL only
 * when out of memory.
 */
struct response	*response_new(int status, const char *content_type,
		    const char *body, size_t len);
struct response	*response_json(int status, json_t *value);
/*
 * A response whose body is b's bytes, taken over, not copied (b is left
 * empty, as buf_free leaves it).  NULL out of memory (b freed).
 */
struct response	*response_buf(int status, const char *content_type,
		    struct buf *b);
void		 response_free(struct response *);

/*
 * Add a header (copied).  0, or -1 out of memory or when the name or
 * value would break the header block (CR, LF, a colon in the name).
 */
int		 response_header(struct response *, const char *name,
		    const char *value);

/* The CGI response: "Status:", headers, blank line, body. 0 or -1. */
int		 response_write(const struct response *, int fd);

/*
 * The same bytes in one malloc'd buffer (*out, *len; the caller frees),
 * for a writer other than a file descriptor.  0, or -1 out of memory.
 */
int		 response_render(const struct response *, char **out,
		    size_t *len);

#endif
