/*
 * html.c: HTML for email: escaping text into it (the values merged into a
 * template) and a readable plain-text rendering of it (the text/plain
 * alternative of every email).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "content/html.h"

int
html_escape(struct buf *b, const char *s, size_t len)
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
html_to_text(const char *html, size_t len)
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
