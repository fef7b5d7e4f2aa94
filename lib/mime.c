/*
 * mime.c: base64, HTML escaping, HTML to text, and what an email may
 * carry: the addresses it accepts and its attachments' file names.  The
 * message itself is built by the daemon alone (spooler/message.c).
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
