/*
 * mime.c: base64, HTML escaping, HTML to text.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/base64.h>

#include "mime.h"

int
mime_base64_decode(const char *s, size_t len, size_t max,
    unsigned char **out, size_t *outlen)
{
	struct base64_decode_ctx	 ctx;
	unsigned char			*p;
	size_t				 i, sig = 0, n, done = 0, chunk;
	int				 padded = 0;

	*out = NULL;
	*outlen = 0;
	/* Count the significant characters to supply missing padding. */
	for (i = 0; i < len; i++) {
		if (s[i] == '=')
			padded = 1;
		else if (!isspace((unsigned char)s[i]))
			sig++;
	}
	if (!padded && sig % 4 == 1)
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
	size_t		i, end;
	unsigned long	cp;
	char		*stop, num[16];

	for (end = 1; end < len && end < 12 && s[end] != ';'; end++)
		;
	if (end >= len || s[end] != ';' || end < 2)
		return 0;
	if (s[1] == '#') {
		if (end - 2 >= sizeof(num) || end < 3)
			return 0;
		memcpy(num, s + 2, end - 2);
		num[end - 2] = '\0';
		if (num[0] == 'x' || num[0] == 'X')
			cp = strtoul(num + 1, &stop, 16);
		else
			cp = strtoul(num, &stop, 10);
		if (*stop != '\0' || stop == num)
			return 0;
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

static int
tag_is(const char *name, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcasecmp(name, *list) == 0)
			return 1;
	return 0;
}

/* The value of attribute attr in a tag's text, into out. */
static void
attribute(const char *tag, size_t len, const char *attr, char *out,
    size_t outlen)
{
	size_t	i, alen = strlen(attr), n;
	char	q;

	out[0] = '\0';
	for (i = 0; i + alen < len; i++) {
		if (strncasecmp(tag + i, attr, alen) != 0 || (i > 0 &&
		    !isspace((unsigned char)tag[i - 1])))
			continue;
		i += alen;
		while (i < len && isspace((unsigned char)tag[i]))
			i++;
		if (i >= len || tag[i] != '=')
			continue;
		i++;
		while (i < len && isspace((unsigned char)tag[i]))
			i++;
		q = i < len && (tag[i] == '"' || tag[i] == '\'') ? tag[i++] : 0;
		for (n = 0; i < len && n + 1 < outlen; i++, n++) {
			if (q ? tag[i] == q : isspace((unsigned char)tag[i]))
				break;
			out[n] = tag[i];
		}
		out[n] = '\0';
		return;
	}
}

char *
mime_html_to_text(const char *html, size_t len)
{
	static const char *const skipped[] = { "script", "style", "head",
	    "title", NULL };
	static const char *const paragraphs[] = { "p", "div", "h1", "h2",
	    "h3", "h4", "h5", "h6", "table", "ul", "ol", "blockquote", "pre",
	    "hr", "section", "article", "header", "footer", NULL };
	static const char *const lines[] = { "br", "tr", "li", "dt", "dd",
	    NULL };
	struct buf	 raw = { 0 }, out = { 0 };
	char		 name[16], href[1024] = "";
	const char	*end, *skip_to = NULL;
	size_t		 i, n, j, tlen, linkstart = 0;
	int		 closing, space = 0;

	for (i = 0; i < len; ) {
		if (html[i] == '<') {
			if (len - i >= 4 && strncmp(html + i, "<!--", 4) == 0) {
				end = memmem(html + i, len - i, "-->", 3);
				i = end ? (size_t)(end - html) + 3 : len;
				continue;
			}
			end = memchr(html + i, '>', len - i);
			if (end == NULL)
				break;
			tlen = (size_t)(end - (html + i)) + 1;
			closing = html[i + 1] == '/';
			for (j = i + 1 + closing, n = 0; j < i + tlen &&
			    n + 1 < sizeof(name) &&
			    isalnum((unsigned char)html[j]); j++)
				name[n++] = html[j];
			name[n] = '\0';
			i += tlen;
			if (skip_to != NULL) {
				if (closing && strcasecmp(name, skip_to) == 0)
					skip_to = NULL;
				continue;
			}
			if (!closing && tag_is(name, skipped)) {
				skip_to = tag_is(name, skipped) ?
				    (strcasecmp(name, "script") == 0 ? "script" :
				    strcasecmp(name, "style") == 0 ? "style" :
				    strcasecmp(name, "head") == 0 ? "head" :
				    "title") : NULL;
				continue;
			}
			if (tag_is(name, paragraphs)) {
				buf_puts(&raw, "\n\n");
				space = 0;
			} else if (tag_is(name, lines)) {
				buf_putc(&raw, '\n');
				if (!closing && strcasecmp(name, "li") == 0)
					buf_puts(&raw, "- ");
				space = 0;
			} else if (strcasecmp(name, "a") == 0) {
				if (!closing) {
					attribute(html + i - tlen, tlen, "href",
					    href, sizeof(href));
					linkstart = raw.len;
				} else if (href[0] != '\0') {
					/* Keep the link's target readable. */
					if (raw.len - linkstart != strlen(href) ||
					    strncmp(raw.p + linkstart, href,
					    strlen(href)) != 0) {
						buf_puts(&raw, " (");
						buf_puts(&raw, href);
						buf_putc(&raw, ')');
					}
					href[0] = '\0';
				}
			}
			continue;
		}
		if (skip_to != NULL) {
			i++;
			continue;
		}
		if (isspace((unsigned char)html[i])) {
			space = 1;
			i++;
			continue;
		}
		if (space && raw.len > 0 && raw.p[raw.len - 1] != '\n' &&
		    raw.p[raw.len - 1] != ' ')
			buf_putc(&raw, ' ');
		space = 0;
		if (html[i] == '&' && (n = entity(&raw, html + i,
		    len - i)) > 0) {
			i += n;
			continue;
		}
		buf_putc(&raw, html[i++]);
	}
	/* Trim each line, at most one blank line in a row, none at the ends. */
	for (i = 0; raw.p != NULL && i < raw.len; ) {
		end = memchr(raw.p + i, '\n', raw.len - i);
		n = end ? (size_t)(end - (raw.p + i)) : raw.len - i;
		j = i;
		while (n > 0 && raw.p[j] == ' ') {
			j++;
			n--;
		}
		while (n > 0 && raw.p[j + n - 1] == ' ')
			n--;
		if (n > 0) {
			if (out.len > 0)
				buf_puts(&out, space == 2 ? "\n\n" : "\n");
			buf_add(&out, raw.p + j, n);
			space = 1;
		} else if (out.len > 0)
			space = 2;
		i += (size_t)(end ? end - (raw.p + i) + 1 : (long)(raw.len - i));
	}
	buf_free(&raw);
	if (out.len > 0)
		buf_putc(&out, '\n');
	return buf_take(&out, NULL);
}
