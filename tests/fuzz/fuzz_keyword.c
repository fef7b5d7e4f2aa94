/*
 * fuzz_keyword: keyword_fold and keyword_match (lib/content/keyword.c),
 * which read the text of every inbound message a client owns.  Besides
 * memory errors: what comes out is UTF-8 without blanks at either end or
 * two in a row, no longer than its room, and folds to itself; a text
 * matches as its fold does, and one that folds to a default keyword is
 * that keyword; a text with the fold of a keyword inside it and more
 * around is none.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "content/keyword.h"
#include "fuzzutil.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const struct keywords defaults = {
	{ KEYWORD_STOP_DEFAULT, KEYWORD_START_DEFAULT, KEYWORD_HELP_DEFAULT },
	{ NULL, NULL, NULL }, 0
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*text = (const char *)data;
	char		 f[KEYWORD_MAX + 1], again[KEYWORD_MAX + 1], *s;
	char		 longer[KEYWORD_MAX + 16];
	int		 n, k;

	n = keyword_fold(text, size, f, sizeof(f));
	if (n == -1)
		return 0;
	if ((size_t)n != strlen(f) || (size_t)n >= sizeof(f))
		fuzz_fail("fold length %d of '%s'", n, f);
	if (!fuzz_utf8(f, (size_t)n))
		fuzz_fail("UTF-8 in, not UTF-8 out: '%s'", f);
	if (n > 0 && (f[0] == ' ' || f[n - 1] == ' ' || strstr(f, "  ")))
		fuzz_fail("blanks left in '%s'", f);
	if (keyword_fold(f, (size_t)n, again, sizeof(again)) != n ||
	    strcmp(f, again) != 0)
		fuzz_fail("'%s' folds to '%s'", f, again);
	/* keyword_match reads a C string: the input up to a NUL. */
	if (memchr(text, '\0', size) != NULL || (s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, text, size);
	s[size] = '\0';
	k = keyword_match(&defaults, s);
	if (k != keyword_match(&defaults, f))
		fuzz_fail("'%s' and its fold '%s' match apart", s, f);
	if (k == -1 && (strcmp(f, "stop") == 0 || strcmp(f, "opt out") == 0))
		fuzz_fail("'%s' is no keyword", s);
	if (k != -1 && (size_t)n + 2 < sizeof(longer)) {
		memcpy(longer, f, (size_t)n);
		memcpy(longer + n, " x", 3);
		if (keyword_match(&defaults, longer) != -1)
			fuzz_fail("'%s', a keyword and more, matches", longer);
	}
	free(s);
	return 0;
}
