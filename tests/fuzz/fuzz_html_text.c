/*
 * fuzz_html_text: html_to_text (lib/content/html.c), the text/plain
 * alternative of every email.  Besides memory errors: UTF-8 in gives
 * UTF-8 out (the text goes into the spool through jansson), no NUL
 * appears that was not there, the lines are tidied as its comment says,
 * and text without markup comes out as its words.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "content/html.h"
#include "fuzzutil.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The words of s joined by single blanks, and a newline; "" for none. */
static char *
words(const char *s, size_t len)
{
	struct buf	 b = { NULL, 0, 0, 0 };
	size_t		 i = 0, start;

	while (i < len) {
		while (i < len && isspace((unsigned char)s[i]))
			i++;
		if (i >= len)
			break;
		for (start = i; i < len && !isspace((unsigned char)s[i]); i++)
			;
		if (b.len > 0)
			buf_putc(&b, ' ');
		buf_add(&b, s + start, i - start);
	}
	if (b.len > 0)
		buf_putc(&b, '\n');
	return buf_take(&b, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*html = (const char *)data, *p, *eol;
	char		*text, *want;
	size_t		 len, n;

	if ((text = html_to_text(html, size)) == NULL)
		return 0;
	len = strlen(text);
	if (memchr(html, '\0', size) == NULL) {
		if (fuzz_utf8(html, size) && !fuzz_utf8(text, len))
			fuzz_fail("UTF-8 in, not UTF-8 out: '%s'", text);
		if (len > 0 && text[len - 1] != '\n')
			fuzz_fail("text does not end with a newline");
		if (text[0] == '\n' || strstr(text, "\n\n\n") != NULL)
			fuzz_fail("blank lines at the start or in a row");
		for (p = text; p < text + len; p = eol + 1) {
			eol = strchr(p, '\n');
			n = (size_t)(eol - p);
			if (n > 0 && (p[0] == ' ' || p[n - 1] == ' '))
				fuzz_fail("untrimmed line '%.*s'", (int)n, p);
		}
		if (memchr(html, '<', size) == NULL &&
		    memchr(html, '&', size) == NULL &&
		    (want = words(html, size)) != NULL) {
			if (strcmp(text, want) != 0)
				fuzz_fail("plain text '%s' became '%s'", want,
				    text);
			free(want);
		}
	}
	free(text);
	return 0;
}
