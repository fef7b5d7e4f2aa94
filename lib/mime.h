/*
 * mime.h: what email needs besides templates: base64 (RFC 4648, through
 * nettle), HTML escaping for merge values, and a plain-text rendering of
 * an HTML body for the text/plain alternative.
 */
#ifndef MIME_H
#define MIME_H

#include <stddef.h>

#include "buf.h"

/*
 * Decode base64: padding optional, whitespace (line breaks) ignored,
 * anything else outside the alphabet an error.  Stops with an error as
 * soon as the output would pass max bytes (0: no limit).  Returns 0 with
 * a malloc'd *out (caller frees), -1 when the input is not base64, -2
 * when it decodes to more than max bytes.
 */
int	 mime_base64_decode(const char *s, size_t len, size_t max,
	    unsigned char **out, size_t *outlen);

/* Encode as one line of base64 with padding.  malloc'd, NULL on ENOMEM. */
char	*mime_base64_encode(const unsigned char *p, size_t len);

/* Append s with & < > " ' escaped as HTML entities. */
int	 mime_html_escape(struct buf *, const char *s, size_t len);

/*
 * A readable plain-text rendering of HTML: tags dropped (script, style
 * and head with their content), block elements and <br> as line breaks,
 * list items as "- ", links as "text (href)", common entities decoded,
 * runs of blank space collapsed.  malloc'd, NULL on ENOMEM.
 */
char	*mime_html_to_text(const char *html, size_t len);

/* Whether name is a plain file name: no / \ NUL CR LF, not . or .. */
const char *mime_filename_check(const char *name, size_t len);

#endif
