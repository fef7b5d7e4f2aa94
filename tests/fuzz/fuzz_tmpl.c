/*
 * fuzz_tmpl: templates and merging (lib/content/tmpl.c).  The input is a
 * template file, optionally followed by a NUL and a JSON value (an
 * object of fields, or an array of OTT parameters) to merge into it.
 * The template is parsed from memory, loaded from disk as an email and
 * as an OTT template and listed; its subject and body are merged, plain
 * and HTML-escaped.  Besides memory errors: the three readings agree,
 * the body is the input's tail, a merge fails exactly when a marker has
 * no value and then names it, and an HTML merge puts no markup of the
 * values into the result.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mime.h"
#include "content/tmpl.h"
#include "fuzzutil.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	root[FUZZ_PATH_MAX];
static char	email_path[FUZZ_PATH_MAX], ott_path[FUZZ_PATH_MAX];
static json_t	*defaults;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	dir[FUZZ_PATH_MAX], sub[FUZZ_PATH_MAX];

	(void)argc;
	(void)argv;
	fuzz_scratch(dir, sizeof(dir), "tmpl");
	fuzz_path(root, "%s/templates", dir);
	fuzz_path(sub, "%s/acme", root);
	if (mkdir(root, 0700) == -1 || mkdir(sub, 0700) == -1)
		fuzz_fail("mkdir %s", sub);
	fuzz_path(sub, "%s/acme/email", root);
	if (mkdir(sub, 0700) == -1)
		fuzz_fail("mkdir %s", sub);
	fuzz_path(sub, "%s/acme/ott", root);
	if (mkdir(sub, 0700) == -1)
		fuzz_fail("mkdir %s", sub);
	fuzz_path(email_path, "%s/acme/email/t.tmpl", root);
	fuzz_path(ott_path, "%s/acme/ott/t.tmpl", root);
	/* The fields of the seed templates, with markup to escape. */
	defaults = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
	    "first_name", "Ann <b>&amp;</b>", "name", "O'Hara \"&\"",
	    "account", "acc-1", "number", "42", "receipt_no", "R-7",
	    "amount", "<script>x</script>");
	return 0;
}

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL &&
	    strcmp(a, b) == 0);
}

static void
compare(const struct tmpl *a, const struct tmpl *b, const char *what)
{
	if (!same_str(a->name, b->name) || !same_str(a->subject, b->subject) ||
	    !same_str(a->from, b->from) || !same_str(a->tags, b->tags) ||
	    !same_str(a->created, b->created) ||
	    !same_str(a->language, b->language) ||
	    !same_str(a->provider_template, b->provider_template) ||
	    a->body_len != b->body_len ||
	    memcmp(a->body, b->body, a->body_len) != 0)
		fuzz_fail("tmpl_parse and %s differ", what);
}

static size_t
count(const char *s, size_t len, char c)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++)
		n += s[i] == c;
	return n;
}

static void
merge(const char *text, size_t len, const json_t *values)
{
	char	*plain, *html, missing[256], missing2[256];
	size_t	 plen, hlen;

	plain = tmpl_merge(text, len, values, 0, &plen, missing,
	    sizeof(missing));
	html = tmpl_merge(text, len, values, 1, &hlen, missing2,
	    sizeof(missing2));
	if ((plain == NULL) != (html == NULL))
		fuzz_fail("plain and HTML merges disagree");
	if (plain == NULL) {
		if (missing[0] == '\0' || strcmp(missing, missing2) != 0)
			fuzz_fail("a failed merge names '%s' and '%s'",
			    missing, missing2);
		return;
	}
	if (missing[0] != '\0')
		fuzz_fail("a merge both worked and lacks '%s'", missing);
	/* Markup comes from the template only: values are escaped. */
	if (count(html, hlen, '<') > count(text, len, '<') ||
	    count(html, hlen, '>') > count(text, len, '>') ||
	    count(html, hlen, '"') > count(text, len, '"'))
		fuzz_fail("an HTML merge let markup of a value through");
	/* Without markers it is the text itself. */
	if (memmem(text, len, "{{", 2) == NULL && (plen != len ||
	    memcmp(plain, text, len) != 0))
		fuzz_fail("a text without markers changed in a merge");
	free(plain);
	free(html);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*text = (const char *)data, *nul;
	struct tmpl	*t, *e, *o;
	json_t		*values = NULL, *list;
	char		 err[256];
	size_t		 len = size;
	enum msg_status	 st;
	const struct timespec mtime[2] = { { 1700000000, 0 },
	    { 1700000000, 0 } };

	if ((nul = memchr(text, '\0', size)) != NULL) {
		len = (size_t)(nul - text);
		values = json_loadb(nul + 1, size - len - 1, JSON_DECODE_ANY,
		    NULL);
	}
	if (values == NULL)
		values = json_incref(defaults);

	t = tmpl_parse("t", text, len, 1700000000, err, sizeof(err));
	fuzz_write_file(email_path, text, len);
	fuzz_write_file(ott_path, text, len);
	/* A missing Created is the file's mtime: make it the same. */
	if (utimensat(AT_FDCWD, email_path, mtime, 0) == -1 ||
	    utimensat(AT_FDCWD, ott_path, mtime, 0) == -1)
		fuzz_fail("utimensat failed");
	e = tmpl_load(root, "acme", TMPL_EMAIL, "t", &st, err, sizeof(err));
	if ((t == NULL) != (e == NULL) || (e == NULL && st != MSG_TEMPFAIL) ||
	    (e != NULL && st != MSG_OK))
		fuzz_fail("tmpl_parse and tmpl_load disagree");
	o = tmpl_load(root, "acme", TMPL_OTT, "t", &st, err, sizeof(err));
	if ((t == NULL) != (o == NULL))
		fuzz_fail("email and OTT loads disagree");
	if ((list = tmpl_list_email(root, "acme")) == NULL)
		fuzz_fail("tmpl_list_email failed");
	if (json_array_size(list) != (t != NULL))
		fuzz_fail("%zu templates listed", json_array_size(list));
	json_decref(list);

	if (t != NULL) {
		compare(t, e, "tmpl_load");
		compare(t, o, "the OTT load");
		if (t->body_len > len || memcmp(t->body, text + len -
		    t->body_len, t->body_len) != 0)
			fuzz_fail("the body is not the end of the file");
		if (o->parameters < 0 || o->parameters > 100 ||
		    (t->parameters >= 0 && o->parameters != t->parameters))
			fuzz_fail("OTT parameters %ld (declared %ld)",
			    o->parameters, t->parameters);
		if (t->subject != NULL)
			merge(t->subject, strlen(t->subject), values);
		merge(t->body, t->body_len, values);
	}
	/* Merging works on any text, template or not. */
	merge(text, len, values);
	tmpl_free(t);
	tmpl_free(e);
	tmpl_free(o);
	json_decref(values);
	return 0;
}
