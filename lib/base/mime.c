/*
 * mime.c: base64, and what an email may carry: the addresses it accepts
 * and its attachments' file names.  HTML is html.c's; the message itself
 * is built by the daemon alone (spooler/providers/message.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/base64.h>

#include "base/mime.h"
#include "base/valid.h"

int
mime_base64_decode(const char *s, size_t len, size_t max,
    unsigned char **out, size_t *outlen)
{
	struct base64_decode_ctx	 ctx;
	unsigned char			*p;
	size_t				 i, sig = 0, n, done = 0, chunk;
	size_t				 padded = 0;

	*out = NULL;
	*outlen = 0;
	/* Count the significant characters to supply missing padding. */
	for (i = 0; i < len; i++) {
		if (s[i] == '=')
			padded++;
		else if (!isspace((unsigned char)s[i]))
			sig++;
	}
	/* A lone sixth of a byte, or padding that does not fit, is wrong. */
	if (sig % 4 == 1 || padded > 2 || (padded && (sig + padded) % 4))
		return -1;
	if (max > 0 && sig / 4 * 3 > max + 3)
		return -2;
	if ((p = malloc(BASE64_DECODE_LENGTH(len) + 3)) == NULL)
		return -1;
	base64_decode_init(&ctx);
	/* In slices, so the size limit stops a huge input early. */
	for (i = 0; i < len; i += chunk) {
		chunk = len - i < 65536 ? len - i : 65536;
		n = BASE64_DECODE_LENGTH(chunk);
		if (!base64_decode_update(&ctx, &n, p + done, chunk, s + i))
			goto bad;
		done += n;
		if (max > 0 && done > max) {
			free(p);
			return -2;
		}
	}
	if (!padded && sig % 4 != 0) {
		n = BASE64_DECODE_LENGTH(2);
		if (!base64_decode_update(&ctx, &n, p + done,
		    4 - sig % 4, "=="))
			goto bad;
		done += n;
	}
	if (!base64_decode_final(&ctx))
		goto bad;
	if (max > 0 && done > max) {
		free(p);
		return -2;
	}
	*out = p;
	*outlen = done;
	return 0;
bad:
	free(p);
	return -1;
}

char *
mime_base64_encode(const unsigned char *p, size_t len)
{
	char	*out;
	size_t	 n = BASE64_ENCODE_RAW_LENGTH(len);

	if ((out = malloc(n + 1)) == NULL)
		return NULL;
	base64_encode_raw(out, len, p);
	out[n] = '\0';
	return out;
}

const char *
mime_filename_check(const char *name, size_t len)
{
	size_t	i;

	if (len == 0)
		return "must not be empty";
	if (len > 255)
		return "must be at most 255 bytes";
	if (memchr(name, '/', len) || memchr(name, '\\', len))
		return "must be a plain file name, without '/' or '\\'";
	if (memchr(name, '\0', len) || memchr(name, '\r', len) ||
	    memchr(name, '\n', len))
		return "must not contain NUL, CR or LF";
	/* Control characters (DEL too; a tab is encoded) cannot be sent. */
	for (i = 0; i < len; i++)
		if (((unsigned char)name[i] < 0x20 && name[i] != '\t') ||
		    name[i] == 0x7f)
			return "must not contain control characters";
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return "must be a file name, not '.' or '..'";
	return NULL;
}

/* RFC 5322 atext, and any byte of a UTF-8 sequence (RFC 6532). */
static int
atext(unsigned char c)
{
	return isalnum(c) || c >= 0x80 ||
	    (c != '\0' && strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL);
}

const char *
mime_addr_spec_check(const char *s, size_t len)
{
	size_t	i;

	if (valid_email(s, len) != NULL)
		return "must be an email address such as name@example.com";
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return "must be an ASCII address: an address with "
			    "non-ASCII characters (SMTPUTF8) cannot be sent";
	return NULL;
}

const char *
mime_address_parse(const char *s, size_t len, struct mime_address *out)
{
	static const char *const one = "must be one address such as "
	    "a@example.com or Name <a@example.com>";
	const char	*why;
	size_t		 i = 0, start, end;

	memset(out, 0, sizeof(*out));
	if (s == NULL)
		return one;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "must not contain control characters (CR, LF, "
			    "NUL, ...)";
	/* No angle bracket: a bare addr-spec, nothing around it. */
	if (memchr(s, '<', len) == NULL && memchr(s, '>', len) == NULL) {
		if ((why = mime_addr_spec_check(s, len)) != NULL)
			return memchr(s, ' ', len) || memchr(s, ',', len) ||
			    memchr(s, ';', len) ? one : why;
		out->addr = s;
		out->addrlen = len;
		return NULL;
	}
	for (i = 0; i < len && s[i] == ' '; i++)
		;
	start = i;
	if (i < len && s[i] == '"') {
		/* A quoted string: anything but a bare '"' or '\'. */
		for (i++; i < len && s[i] != '"'; i++)
			if (s[i] == '\\' && ++i == len)
				break;
		if (i >= len)
			return "the display name's quotes are not closed";
		end = ++i;
		out->quoted = 1;
	} else {
		/* A phrase: words, blanks between them, dots allowed. */
		while (i < len && (atext((unsigned char)s[i]) || s[i] == '.' ||
		    s[i] == ' '))
			i++;
		for (end = i; end > start && s[end - 1] == ' '; end--)
			;
		if (i < len && s[i] != '<')
			return "a display name with characters such as "
			    "< > ( ) [ ] , ; : @ \" must be in double quotes";
	}
	if (end > start) {
		out->name = s + start;
		out->namelen = end - start;
	}
	while (i < len && s[i] == ' ')
		i++;
	if (i >= len || s[i] != '<' || s[len - 1] != '>' || len - i < 3)
		return one;
	out->addr = s + i + 1;
	out->addrlen = len - i - 2;
	if ((why = mime_addr_spec_check(out->addr, out->addrlen)) != NULL) {
		memset(out, 0, sizeof(*out));
		return memchr(s + i + 1, '<', len - i - 1) ||
		    memchr(s + i + 1, '>', len - i - 2) ? one : why;
	}
	return NULL;
}
