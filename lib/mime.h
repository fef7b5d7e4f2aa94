/*
 * mime.h: what email needs besides templates: base64 (RFC 4648, through
 * nettle), HTML escaping for merge values, and a plain-text rendering of
 * an HTML body for the text/plain alternative.
 */
#ifndef MIME_H
#define MIME_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

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

/*
 * Append a header value for an email: as it is when ASCII, else as RFC
 * 2047 UTF-8 "B" words of at most 45 bytes, cut between characters.  In
 * "Name <addr>" (From, To) only the display name is encoded.
 */
void	 mime_header_value(struct buf *, const char *value, int address);

/* The RFC 5322 date of t ("Mon, 23 Nov 2026 10:00:00 +0000"), in English. */
void	 mime_date(time_t t, char *buf, size_t len);

/*
 * An email spool message ({"from","to","subject","html","text",
 * "attachments":[{"name","contentType","content"}]}) as an RFC 5322
 * message: Date, From, To, Subject, Message-ID <id@sender's domain>,
 * MIME-Version, then multipart/mixed of a multipart/alternative (text,
 * HTML; quoted-printable) and the attachments (base64).  CRLF line ends.
 * malloc'd (length in *len), NULL on bad input or ENOMEM.
 */
char	*mime_message(const json_t *msg, const char *id, time_t date,
	    size_t *len);

/* Whether name is a plain file name: no / \ NUL CR LF, not . or .. */
const char *mime_filename_check(const char *name, size_t len);

#endif
