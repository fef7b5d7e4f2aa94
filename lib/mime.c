/*
 * mime.c: base64, HTML escaping, HTML to text, and the email message:
 * its header encodings (RFC 2047 words, RFC 2231 file names), the
 * addresses it accepts, and the .eml builder.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/base64.h>

#include "mime.h"
#include "valid.h"

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

int
mime_html_escape(struct buf *b, const char *s, size_t len)
{
	size_t	i, start = 0;
	const char *rep;

	for (i = 0; i < len; i++) {
		switch (s[i]) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default: continue;
		}
		buf_add(b, s + start, i - start);
		buf_puts(b, rep);
		start = i + 1;
	}
	return buf_add(b, s + start, len - start);
}

const char *
mime_filename_check(const char *name, size_t len)
{
	if (len == 0)
		return "must not be empty";
	if (len > 255)
		return "must be at most 255 bytes";
	if (memchr(name, '/', len) || memchr(name, '\\', len))
		return "must be a plain file name, without '/' or '\\'";
	if (memchr(name, '\0', len) || memchr(name, '\r', len) ||
	    memchr(name, '\n', len))
		return "must not contain NUL, CR or LF";
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return "must be a file name, not '.' or '..'";
	return NULL;
}

/* Append code point cp as UTF-8. */
static void
put_utf8(struct buf *b, unsigned long cp)
{
	char	u[4];

	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		buf_putc(b, (char)cp);
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, u, 4);
	}
}

/* Decode the entity at s ('&'); returns the bytes consumed, 0 if none. */
static size_t
entity(struct buf *b, const char *s, size_t len)
{
	static const struct {
		const char	*name;
		unsigned long	 cp;
	} named[] = {
		{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' },
		{ "apos", '\'' }, { "nbsp", ' ' }, { "copy", 0xa9 },
		{ "reg", 0xae }, { "euro", 0x20ac }, { "ndash", 0x2013 },
		{ "mdash", 0x2014 }, { "hellip", 0x2026 },
	};
	size_t		i, end, start;
	unsigned long	cp = 0;
	int		hex;

	for (end = 1; end < len && end < 12 && s[end] != ';'; end++)
		;
	if (end >= len || s[end] != ';' || end < 2)
		return 0;
	if (s[1] == '#') {
		hex = end > 2 && (s[2] == 'x' || s[2] == 'X');
		start = hex ? 3 : 2;
		if (start >= end)
			return 0;
		/* Digits only: "&#x;" and "&# 65;" stay as written. */
		for (i = start; i < end; i++) {
			if (hex ? !isxdigit((unsigned char)s[i]) :
			    !isdigit((unsigned char)s[i]))
				return 0;
			cp = cp * (hex ? 16 : 10) + (unsigned long)(isdigit(
			    (unsigned char)s[i]) ? s[i] - '0' :
			    tolower((unsigned char)s[i]) - 'a' + 10);
			if (cp > 0x10ffff)
				cp = 0x110000;
		}
		put_utf8(b, cp);
		return end + 1;
	}
	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (strlen(named[i].name) == end - 1 &&
		    strncmp(named[i].name, s + 1, end - 1) == 0) {
			put_utf8(b, named[i].cp);
			return end + 1;
		}
	return 0;
}

/* Append text with its entities decoded. */
static void
decoded(struct buf *b, const char *s, size_t len)
{
	size_t	i = 0, n;

	while (i < len) {
		if (s[i] == '&' && (n = entity(b, s + i, len - i)) > 0)
			i += n;
		else
			buf_putc(b, s[i++]);
	}
}

static int
tag_is(const char *name, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcasecmp(name, *list) == 0)
			return 1;
	return 0;
}

/*
 * The value of attribute attr of the tag text (from '<' to '>'), entities
 * decoded, into out; nothing when absent.  Quoted values are skipped
 * whole, so "href" inside another attribute's value does not count.
 */
static void
attribute(const char *tag, size_t len, const char *attr, struct buf *out)
{
	size_t	i = 1, name, nlen, v, vlen;
	char	q;

	while (i < len && (isalnum((unsigned char)tag[i]) || tag[i] == '/'))
		i++;
	while (i < len) {
		while (i < len && (isspace((unsigned char)tag[i]) ||
		    tag[i] == '/'))
			i++;
		if (i >= len || tag[i] == '>')
			return;
		for (name = i; i < len && !isspace((unsigned char)tag[i]) &&
		    tag[i] != '=' && tag[i] != '>'; i++)
			;
		nlen = i - name;
		while (i < len && isspace((unsigned char)tag[i]))
			i++;
		v = i;
		vlen = 0;
		if (i < len && tag[i] == '=') {
			i++;
			while (i < len && isspace((unsigned char)tag[i]))
				i++;
			q = i < len && (tag[i] == '"' || tag[i] == '\'') ?
			    tag[i++] : 0;
			for (v = i; i < len && (q ? tag[i] != q :
			    !isspace((unsigned char)tag[i]) && tag[i] != '>');
			    i++)
				;
			vlen = i - v;
			if (q && i < len)
				i++;
		}
		if (nlen == strlen(attr) &&
		    strncasecmp(tag + name, attr, nlen) == 0) {
			decoded(out, tag + v, vlen);
			return;
		}
	}
}

/* Where the raw-text element (script, style) closing at s ends. */
static size_t
skip_raw(const char *s, size_t len, const char *name)
{
	size_t	i, n = strlen(name);
	const char *gt;

	for (i = 0; i + 2 + n <= len; i++)
		if (s[i] == '<' && s[i + 1] == '/' &&
		    strncasecmp(s + i + 2, name, n) == 0 &&
		    (i + 2 + n == len || !isalnum((unsigned char)s[i + 2 + n]))) {
			gt = memchr(s + i, '>', len - i);
			return gt ? (size_t)(gt - s) + 1 : len;
		}
	return len;
}

/* The text being built, and a space owed between words. */
struct text {
	struct buf	raw;
	int		space;
};

/* Write an owed space, unless at the start of a line. */
static void
flush_space(struct text *t)
{
	if (t->space && t->raw.len > 0 && t->raw.p[t->raw.len - 1] != '\n' &&
	    t->raw.p[t->raw.len - 1] != ' ')
		buf_putc(&t->raw, ' ');
	t->space = 0;
}

static void
newlines(struct text *t, const char *s)
{
	buf_puts(&t->raw, s);
	t->space = 0;
}

/* Trim each line, at most one blank line in a row, none at the ends. */
static char *
tidy(struct buf *raw)
{
	struct buf	 out = { 0 };
	const char	*end;
	size_t		 i, j, n;
	int		 blank = 0;

	for (i = 0; raw->p != NULL && i < raw->len; ) {
		end = memchr(raw->p + i, '\n', raw->len - i);
		n = end ? (size_t)(end - (raw->p + i)) : raw->len - i;
		j = i;
		while (n > 0 && raw->p[j] == ' ') {
			j++;
			n--;
		}
		while (n > 0 && raw->p[j + n - 1] == ' ')
			n--;
		if (n > 0) {
			if (out.len > 0)
				buf_puts(&out, blank ? "\n\n" : "\n");
			buf_add(&out, raw->p + j, n);
			blank = 0;
		} else if (out.len > 0)
			blank = 1;
		i = end ? (size_t)(end - raw->p) + 1 : raw->len;
	}
	if (out.len > 0)
		buf_putc(&out, '\n');
	return buf_take(&out, NULL);
}

char *
mime_html_to_text(const char *html, size_t len)
{
	static const char *const dropped[] = { "head", "title", NULL };
	static const char *const raw_text[] = { "script", "style", NULL };
	static const char *const paragraphs[] = { "p", "div", "h1", "h2",
	    "h3", "h4", "h5", "h6", "table", "ul", "ol", "blockquote", "pre",
	    "hr", "section", "article", "header", "footer", NULL };
	static const char *const lines[] = { "br", "tr", "li", "dt", "dd",
	    NULL };
	struct text	 t = { { NULL, 0, 0, 0 }, 0 };
	struct buf	 href = { NULL, 0, 0, 0 };
	char		 name[16], *out;
	const char	*end;
	size_t		 i, n, j, tlen, linkstart = 0, depth = 0;
	int		 closing;

	for (i = 0; i < len; ) {
		/* A '<' that starts no tag is text ("1 < 2"). */
		if (html[i] == '<' && i + 1 < len && (isalpha((unsigned char)
		    html[i + 1]) || html[i + 1] == '/' || html[i + 1] == '!')) {
			if (len - i >= 4 && strncmp(html + i, "<!--", 4) == 0) {
				end = memmem(html + i, len - i, "-->", 3);
				i = end ? (size_t)(end - html) + 3 : len;
				continue;
			}
			if ((end = memchr(html + i, '>', len - i)) == NULL)
				goto text;
			tlen = (size_t)(end - (html + i)) + 1;
			closing = html[i + 1] == '/';
			for (j = i + 1 + closing, n = 0; j < i + tlen &&
			    n + 1 < sizeof(name) &&
			    isalnum((unsigned char)html[j]); j++)
				name[n++] = html[j];
			name[n] = '\0';
			i += tlen;
			if (tag_is(name, raw_text)) {
				if (!closing)
					i += skip_raw(html + i, len - i, name);
				continue;
			}
			if (tag_is(name, dropped)) {
				depth = closing ? (depth ? depth - 1 : 0) :
				    depth + 1;
				continue;
			}
			if (depth > 0)
				continue;
			if (tag_is(name, paragraphs))
				newlines(&t, "\n\n");
			else if (tag_is(name, lines)) {
				/* Only the opening tag breaks the line. */
				if (!closing || strcasecmp(name, "br") == 0)
					newlines(&t, "\n");
				if (!closing && strcasecmp(name, "li") == 0)
					buf_puts(&t.raw, "- ");
			} else if (!closing && (strcasecmp(name, "td") == 0 ||
			    strcasecmp(name, "th") == 0))
				t.space = 1;
			else if (strcasecmp(name, "a") == 0) {
				if (!closing) {
					flush_space(&t);
					buf_free(&href);
					attribute(html + i - tlen, tlen, "href",
					    &href);
					linkstart = t.raw.len;
				} else if (href.len > 0) {
					/* Keep the link's target readable. */
					if (t.raw.len - linkstart != href.len ||
					    memcmp(t.raw.p + linkstart, href.p,
					    href.len) != 0) {
						buf_puts(&t.raw, " (");
						buf_add(&t.raw, href.p,
						    href.len);
						buf_putc(&t.raw, ')');
					}
					buf_free(&href);
				}
			}
			continue;
		}
text:
		if (depth > 0) {
			i++;
			continue;
		}
		if (isspace((unsigned char)html[i])) {
			t.space = 1;
			i++;
			continue;
		}
		flush_space(&t);
		if (html[i] == '&' && (n = entity(&t.raw, html + i,
		    len - i)) > 0) {
			i += n;
			continue;
		}
		buf_putc(&t.raw, html[i++]);
	}
	buf_free(&href);
	out = t.raw.failed ? NULL : tidy(&t.raw);
	buf_free(&t.raw);
	return out;
}

static int
ascii(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s >= 0x80)
			return 0;
	return 1;
}

/* Whether s (len bytes) is printable ASCII, blanks included. */
static int
printable(const char *s, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

/*
 * Append s as RFC 2047 "B" words of at most 45 bytes each, cut between
 * UTF-8 characters, one word a line.  Where no cut between characters
 * exists (continuation bytes only: not UTF-8), the word is cut at 45.
 */
static void
encoded_words(struct buf *b, const char *s, size_t len)
{
	size_t	 n;
	char	*w;

	while (len > 0) {
		n = len < 45 ? len : 45;
		while (n < len && n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		if (n == 0)
			n = len < 45 ? len : 45;
		if ((w = mime_base64_encode((const unsigned char *)s, n)) ==
		    NULL) {
			b->failed = 1;
			return;
		}
		buf_puts(b, "=?UTF-8?B?");
		buf_puts(b, w);
		buf_puts(b, "?=");
		free(w);
		s += n;
		len -= n;
		if (len > 0)
			buf_puts(b, "\r\n ");
	}
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

/* Append the display name of a parsed address, encoded as it needs. */
static void
display_name(struct buf *b, const struct mime_address *a)
{
	struct buf	 plain = { NULL, 0, 0, 0 };
	size_t		 i;

	if (a->quoted) {
		if (printable(a->name, a->namelen)) {
			buf_add(b, a->name, a->namelen);
			return;
		}
		/* An encoded word may not stand in quotes: unquote first. */
		for (i = 1; i + 1 < a->namelen; i++) {
			if (a->name[i] == '\\')
				i++;
			buf_putc(&plain, a->name[i]);
		}
		if (plain.failed)
			b->failed = 1;
		else
			encoded_words(b, plain.p ? plain.p : "", plain.len);
		buf_free(&plain);
		return;
	}
	if (!printable(a->name, a->namelen))
		encoded_words(b, a->name, a->namelen);
	else if (memchr(a->name, '.', a->namelen) != NULL) {
		/* "J. Doe": a dot is not an atom's; quoted it is a word. */
		buf_putc(b, '"');
		buf_add(b, a->name, a->namelen);
		buf_putc(b, '"');
	} else
		buf_add(b, a->name, a->namelen);
}

int
mime_header_value(struct buf *b, const char *value, int address)
{
	struct mime_address	a;

	if (!address) {
		if (ascii(value))
			buf_puts(b, value);
		else
			encoded_words(b, value, strlen(value));
		return b->failed ? -1 : 0;
	}
	if (mime_address_parse(value, strlen(value), &a) != NULL)
		return -1;
	if (a.name != NULL) {
		display_name(b, &a);
		buf_putc(b, ' ');
	}
	if (a.name != NULL || value[0] == '<' || value[0] == ' ') {
		buf_putc(b, '<');
		buf_add(b, a.addr, a.addrlen);
		buf_putc(b, '>');
	} else
		buf_add(b, a.addr, a.addrlen);
	return b->failed ? -1 : 0;
}

/* Whether a file name can stand in a quoted string as it is. */
static int
plain_name(const char *name)
{
	size_t	len = strlen(name);

	return printable(name, len) && strchr(name, '"') == NULL &&
	    strchr(name, '\\') == NULL;
}

void
mime_content_type(struct buf *b, const char *type, const char *name)
{
	buf_puts(b, type);
	buf_puts(b, ";\r\n name=\"");
	if (plain_name(name))
		buf_puts(b, name);
	else
		encoded_words(b, name, strlen(name));
	buf_putc(b, '"');
}

void
mime_content_disposition(struct buf *b, const char *name)
{
	static const char	 hex[] = "0123456789ABCDEF";
	struct buf		 enc = { NULL, 0, 0, 0 };
	const unsigned char	*p;
	size_t			 i, n, seg;
	char			 num[32];

	buf_puts(b, "attachment;\r\n filename");
	if (plain_name(name)) {
		buf_puts(b, "=\"");
		buf_puts(b, name);
		buf_putc(b, '"');
		return;
	}
	/* RFC 2231 (as RFC 5987 spells it): attr-char as is, else %XX. */
	for (p = (const unsigned char *)name; *p != '\0'; p++) {
		if (isalnum(*p) || strchr("!#$&+-.^_`|~", *p) != NULL)
			buf_putc(&enc, (char)*p);
		else {
			buf_putc(&enc, '%');
			buf_putc(&enc, hex[*p >> 4]);
			buf_putc(&enc, hex[*p & 15]);
		}
	}
	if (enc.failed) {
		b->failed = 1;
		buf_free(&enc);
		return;
	}
	if (enc.len <= 60) {
		buf_puts(b, "*=utf-8''");
		buf_add(b, enc.p, enc.len);
		buf_free(&enc);
		return;
	}
	/* Continuations of at most 56 characters, never inside a %XX. */
	for (i = 0, seg = 0; i < enc.len; i += n, seg++) {
		n = enc.len - i < 56 ? enc.len - i : 56;
		if (i + n < enc.len && enc.p[i + n - 1] == '%')
			n -= 1;
		else if (i + n < enc.len && enc.p[i + n - 2] == '%')
			n -= 2;
		snprintf(num, sizeof(num), "%s*%zu*=%s", seg ? ";\r\n filename" :
		    "", seg, seg ? "" : "utf-8''");
		buf_puts(b, num);
		buf_add(b, enc.p + i, n);
	}
	buf_free(&enc);
}

void
mime_date(time_t t, char *buf, size_t len)
{
	static const char *const days[] = { "Sun", "Mon", "Tue", "Wed", "Thu",
	    "Fri", "Sat" };
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr",
	    "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct tm	tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%s, %02d %s %d %02d:%02d:%02d +0000",
	    days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
	    tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Append text quoted-printable (RFC 2045), lines of at most 76. */
static void
quoted_printable(struct buf *b, const char *s)
{
	static const char	 hex[] = "0123456789ABCDEF";
	size_t			 col = 0;
	unsigned char		 c;
	char			 enc[3];
	int			 literal;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if (c == '\r')
			continue;
		if (c == '\n') {
			buf_puts(b, "\r\n");
			col = 0;
			continue;
		}
		/* Blanks stay literal unless they end a line. */
		literal = (c >= 33 && c <= 126 && c != '=') ||
		    ((c == ' ' || c == '\t') && s[1] != '\n' && s[1] != '\r' &&
		    s[1] != '\0');
		if (col + (literal ? 1 : 3) > 75) {
			buf_puts(b, "=\r\n");
			col = 0;
		}
		if (literal) {
			buf_putc(b, (char)c);
			col++;
		} else {
			enc[0] = '=';
			enc[1] = hex[c >> 4];
			enc[2] = hex[c & 15];
			buf_add(b, enc, 3);
			col += 3;
		}
	}
	buf_puts(b, "\r\n");
}

/* Append base64 in lines of 76. */
static void
base64_lines(struct buf *b, const char *s, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i += 76) {
		buf_add(b, s + i, len - i < 76 ? len - i : 76);
		buf_puts(b, "\r\n");
	}
}

char *
mime_message(const json_t *msg, const char *id, time_t date, size_t *len)
{
	struct buf	 b = { NULL, 0, 0, 0 };
	const json_t	*atts, *a, *c;
	const char	*from, *to, *subject, *html, *text, *at, *name, *type;
	char		 mixed[64], alt[64], stamp[64];
	size_t		 i;

#define S(k)	json_string_value(json_object_get(msg, k))
	from = S("from");
	to = S("to");
	subject = S("subject");
	html = S("html");
	text = S("text");
#undef S
	if (from == NULL || to == NULL || id == NULL)
		return NULL;
	snprintf(mixed, sizeof(mixed), "=_mixed_%s", id);
	snprintf(alt, sizeof(alt), "=_alt_%s", id);
	mime_date(date, stamp, sizeof(stamp));
	buf_puts(&b, "Date: ");
	buf_puts(&b, stamp);
	buf_puts(&b, "\r\nFrom: ");
	if (mime_header_value(&b, from, 1) == -1)
		goto bad;
	buf_puts(&b, "\r\nTo: ");
	if (mime_header_value(&b, to, 1) == -1)
		goto bad;
	buf_puts(&b, "\r\nSubject: ");
	mime_header_value(&b, subject ? subject : "", 0);
	buf_puts(&b, "\r\nMessage-ID: <");
	buf_puts(&b, id);
	buf_putc(&b, '@');
	at = strrchr(from, '@');
	buf_add(&b, at ? at + 1 : "localhost", at ? strcspn(at + 1, ">") : 9);
	buf_puts(&b, ">\r\nMIME-Version: 1.0\r\n");
	buf_puts(&b, "Content-Type: multipart/mixed; boundary=\"");
	buf_puts(&b, mixed);
	buf_puts(&b, "\"\r\n\r\n--");
	buf_puts(&b, mixed);
	buf_puts(&b, "\r\nContent-Type: multipart/alternative; boundary=\"");
	buf_puts(&b, alt);
	buf_puts(&b, "\"\r\n\r\n");
	if (text != NULL) {
		buf_puts(&b, "--");
		buf_puts(&b, alt);
		buf_puts(&b, "\r\nContent-Type: text/plain; charset=utf-8\r\n"
		    "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
		quoted_printable(&b, text);
	}
	if (html != NULL) {
		buf_puts(&b, "--");
		buf_puts(&b, alt);
		buf_puts(&b, "\r\nContent-Type: text/html; charset=utf-8\r\n"
		    "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
		quoted_printable(&b, html);
	}
	buf_puts(&b, "--");
	buf_puts(&b, alt);
	buf_puts(&b, "--\r\n");
	atts = json_object_get(msg, "attachments");
	json_array_foreach(atts, i, a) {
		name = json_string_value(json_object_get(a, "name"));
		type = json_string_value(json_object_get(a, "contentType"));
		c = json_object_get(a, "content");
		/* Sent without it would be sent wrong: not at all. */
		if (name == NULL || !json_is_string(c))
			goto bad;
		buf_puts(&b, "--");
		buf_puts(&b, mixed);
		buf_puts(&b, "\r\nContent-Type: ");
		mime_content_type(&b, type ? type : "application/octet-stream",
		    name);
		buf_puts(&b, "\r\nContent-Disposition: ");
		mime_content_disposition(&b, name);
		buf_puts(&b, "\r\nContent-Transfer-Encoding: base64\r\n\r\n");
		base64_lines(&b, json_string_value(c), json_string_length(c));
	}
	buf_puts(&b, "--");
	buf_puts(&b, mixed);
	buf_puts(&b, "--\r\n");
	return buf_take(&b, len);
bad:
	buf_free(&b);
	return NULL;
}
