/*
 * mime.h: what email needs besides templates: base64 (RFC 4648, through
 * nettle), HTML escaping for merge values, a plain-text rendering of an
 * HTML body for the text/plain alternative, and the checks of what an
 * email may carry (addresses, file names), made when it is queued.  The
 * message is built by msgspoold alone, with GMime (spooler/providers/message.h).
 */
#ifndef MIME_H
#define MIME_H

#include <stddef.h>

#include "base/buf.h"

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

/*
 * An address as msgspool sends it (From, To): a bare addr-spec
 * "a@example.com", or "Display Name <a@example.com>" where the display
 * name is a phrase of words (letters, digits, !#$%&'*+-/=?^_`{|}~ and
 * UTF-8; dots allowed between them) or one quoted string, and may be
 * empty ("<a@example.com>").  The addr-spec must be ASCII: an address
 * with non-ASCII characters needs SMTPUTF8 end to end and is refused.
 * Anything else ("x> y <a@b.example>", two addresses, a comment) is
 * refused: what cannot be sent correctly is not accepted.
 */
struct mime_address {
	const char	*name;		/* display name as written, or NULL */
	size_t		 namelen;
	int		 quoted;	/* name is a quoted string ("...") */
	const char	*addr;		/* the addr-spec */
	size_t		 addrlen;
};

/*
 * Parse s (len bytes) as one address.  NULL with *out pointing into s,
 * else why it is not one (a phrase for an API error).
 */
const char *mime_address_parse(const char *s, size_t len,
	    struct mime_address *out);

/* Whether s is a bare ASCII addr-spec: NULL, else why not. */
const char *mime_addr_spec_check(const char *s, size_t len);

/* Whether name is a plain file name: no / \ NUL CR LF, not . or .. */
const char *mime_filename_check(const char *name, size_t len);

#endif
