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

/*
 * Append a header value for an email.  Text (address 0): as it is when
 * ASCII, else as RFC 2047 UTF-8 "B" words of at most 45 bytes, cut
 * between characters.  An address (address 1, From and To): parsed with
 * mime_address_parse; only a non-ASCII display name is encoded, a
 * display name with a dot is quoted.  0, or -1 when value is not one
 * address (nothing appended) or memory ran out.
 */
int	 mime_header_value(struct buf *, const char *value, int address);

/*
 * Append the value of an attachment's Content-Type: type with a name
 * parameter, a quoted string (of RFC 2047 words when the name is not
 * printable ASCII, the fallback mail programs expect beside RFC 2231).
 */
void	 mime_content_type(struct buf *, const char *type, const char *name);

/*
 * Append the value of an attachment's Content-Disposition: "attachment;
 * filename=" the name as a quoted string when it is printable ASCII
 * without '"' or '\', else RFC 2231 "filename*=utf-8''" percent-encoded,
 * split into continuations (filename*0*, filename*1*, ...) on lines of
 * at most 78 characters.
 */
void	 mime_content_disposition(struct buf *, const char *name);

/* The RFC 5322 date of t ("Mon, 23 Nov 2026 10:00:00 +0000"), in English. */
void	 mime_date(time_t t, char *buf, size_t len);

/*
 * An email spool message ({"from","to","subject","html","text",
 * "attachments":[{"name","contentType","content"}]}) as an RFC 5322
 * message: Date, From, To, Subject, Message-ID <id@sender's domain>,
 * MIME-Version, then multipart/mixed of a multipart/alternative (text,
 * HTML; quoted-printable) and the attachments (base64).  CRLF line ends.
 * Every attachment must carry its content: one stored once (blob.h) is
 * read back first.  malloc'd (length in *len), NULL on bad input (an
 * address that is not one, an attachment without name or content) or
 * ENOMEM.
 */
char	*mime_message(const json_t *msg, const char *id, time_t date,
	    size_t *len);

/* Whether name is a plain file name: no / \ NUL CR LF, not . or .. */
const char *mime_filename_check(const char *name, size_t len);

#endif
