/*
 * test_tmpl.c: unit tests for lib/tmpl.c (msgspool.conf(5), templates).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "msgspool.h"
#include "tmpl.h"
#include "testutil.h"

static const char email_text[] =
    "Name: Welcome mail\n"
    "Subject: Hello {{name}}\n"
    "From: news@example.com\n"
    "Tags: onboarding,welcome\n"
    "Created: 2026-01-02T03:04:05Z\n"
    "\n"
    "<p>Hi {{name}},</p>\n"
    "<p>welcome.</p>\n";

static const char email_body[] =
    "<p>Hi {{name}},</p>\n"
    "<p>welcome.</p>\n";

static const char ott_text[] =
    "Name: Order shipped\n"
    "Parameters: 2\n"
    "Language: en_US\n"
    "Provider-Template: order_shipped\n"
    "\n"
    "Your order {{1}} ships on {{2}}.\n";

struct fixture {
	char	dir[TU_DIR_SIZE];	/* first: see testutil.h */
	char	root[128];
};

static int
setup(void **state)
{
	struct fixture	*f;

	if ((f = tu_fixture_new(sizeof(*f), "tmpl")) == NULL)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/templates", f->dir);
	if (mkdir(f->root, 0755) == -1) {
		tu_fixture_free(f);
		return -1;
	}
	*state = f;
	return 0;
}

/* Write root/client/kind/file, making the directories. */
static void
put(const struct fixture *f, const char *client, const char *kind,
    const char *file, const char *text)
{
	char	path[1024];

	snprintf(path, sizeof(path), "%s/%s", f->root, client);
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/%s/%s", f->root, client, kind);
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/%s/%s/%s", f->root, client, kind,
	    file);
	tu_write_text(path, text);
}

static void
set_mtime(const struct fixture *f, const char *client, const char *kind,
    const char *file, time_t t)
{
	char		path[1024];
	struct timeval	tv[2];

	snprintf(path, sizeof(path), "%s/%s/%s/%s", f->root, client, kind,
	    file);
	tv[0].tv_sec = tv[1].tv_sec = t;
	tv[0].tv_usec = tv[1].tv_usec = 0;
	assert_int_equal(utimes(path, tv), 0);
}

/* Load client's template id of kind; the test fails if it does not. */
static struct tmpl *
load_ok(const struct fixture *f, const char *client, enum tmpl_kind kind,
    const char *id)
{
	struct tmpl	*t;
	enum msg_status	 st = MSG_OK;
	char		 err[256] = "";

	t = tmpl_load(f->root, client, kind, id, &st, err, sizeof(err));
	if (t == NULL)
		fail_msg("tmpl_load %s: %s", id, err);
	return t;
}

/* Loading client's template id of kind fails with want and a reason. */
static void
load_fails(const struct fixture *f, const char *client,
    enum tmpl_kind kind, const char *id, enum msg_status want)
{
	enum msg_status	st = MSG_OK;
	char		err[256] = "";

	assert_null(tmpl_load(f->root, client, kind, id, &st, err,
	    sizeof(err)));
	assert_int_equal(st, want);
	assert_true(err[0] != '\0');
}

static struct tmpl *
parse_ok(const char *id, const char *text, long long mtime)
{
	struct tmpl	*t;
	char		 err[256] = "";

	t = tmpl_parse(id, text, strlen(text), mtime, err, sizeof(err));
	if (t == NULL)
		fail_msg("tmpl_parse: %s", err);
	return t;
}

static void
test_id_valid(void **state)
{
	char	id[200];

	(void)state;
	assert_true(tmpl_id_valid("welcome"));
	assert_true(tmpl_id_valid("a.b-c_1"));
	assert_true(tmpl_id_valid("A"));
	assert_true(tmpl_id_valid("x.."));
	assert_false(tmpl_id_valid(""));
	assert_false(tmpl_id_valid(".hidden"));
	assert_false(tmpl_id_valid("."));
	assert_false(tmpl_id_valid(".."));
	assert_false(tmpl_id_valid("../x"));
	assert_false(tmpl_id_valid("a/b"));
	assert_false(tmpl_id_valid("a\\b"));
	assert_false(tmpl_id_valid("a b"));
	assert_false(tmpl_id_valid("a\nb"));
	assert_false(tmpl_id_valid("caf\xc3\xa9"));
	memset(id, 'x', 128);
	id[128] = '\0';
	assert_true(tmpl_id_valid(id));
	memset(id, 'x', 129);
	id[129] = '\0';
	assert_false(tmpl_id_valid(id));
}

static void
test_parse_email(void **state)
{
	struct tmpl	*t;

	(void)state;
	t = parse_ok("welcome", email_text, 0);
	assert_string_equal(t->id, "welcome");
	assert_string_equal(t->name, "Welcome mail");
	assert_string_equal(t->subject, "Hello {{name}}");
	assert_string_equal(t->from, "news@example.com");
	assert_string_equal(t->tags, "onboarding,welcome");
	assert_string_equal(t->created, "2026-01-02T03:04:05Z");
	assert_int_equal(t->parameters, -1);
	assert_int_equal(t->body_len, strlen(email_body));
	assert_memory_equal(t->body, email_body, strlen(email_body));
	tmpl_free(t);
}

static void
test_parse_ott(void **state)
{
	struct tmpl	*t;
	const char	*body = "Your order {{1}} ships on {{2}}.\n";

	(void)state;
	t = parse_ok("shipped", ott_text, 0);
	assert_string_equal(t->id, "shipped");
	assert_string_equal(t->name, "Order shipped");
	assert_int_equal(t->parameters, 2);
	assert_string_equal(t->language, "en_US");
	assert_string_equal(t->provider_template, "order_shipped");
	assert_null(t->subject);
	assert_null(t->from);
	assert_int_equal(t->body_len, strlen(body));
	assert_memory_equal(t->body, body, strlen(body));
	tmpl_free(t);
}

static void
test_parse_created_from_mtime(void **state)
{
	struct tmpl	*t;
	const char	*text = "Name: No date\nSubject: s\nFrom: a@b.example\n"
	    "\nbody\n";

	(void)state;
	t = parse_ok("nodate", text, 1700000000LL);
	assert_non_null(t->created);
	assert_string_equal(t->created, "2023-11-14T22:13:20Z");
	tmpl_free(t);
	/* A Created header wins over the mtime. */
	t = parse_ok("welcome", email_text, 1700000000LL);
	assert_string_equal(t->created, "2026-01-02T03:04:05Z");
	tmpl_free(t);
}

static void
test_parse_created_is_utc(void **state)
{
	struct tmpl	*t;

	(void)state;
	/* Another offset, a fraction: the listing's createdDate is UTC. */
	t = parse_ok("offset", "Name: n\nCreated: 2026-01-02T05:04:05.250+02:00"
	    "\n\nbody\n", 1700000000LL);
	assert_string_equal(t->created, "2026-01-02T03:04:05Z");
	tmpl_free(t);
}

static void
test_parse_empty_body(void **state)
{
	struct tmpl	*t;

	(void)state;
	t = parse_ok("empty", "Name: Empty\n\n", 0);
	assert_string_equal(t->name, "Empty");
	assert_int_equal(t->body_len, 0);
	tmpl_free(t);
}

static void
test_parse_body_keeps_colons_and_blank_lines(void **state)
{
	struct tmpl	*t;
	const char	*text = "Name: X\n\nKey: not a header\n\nsecond para\n";
	const char	*body = "Key: not a header\n\nsecond para\n";

	(void)state;
	t = parse_ok("x", text, 0);
	assert_int_equal(t->body_len, strlen(body));
	assert_memory_equal(t->body, body, strlen(body));
	tmpl_free(t);
}

static void
test_parse_bad_header_line(void **state)
{
	char		 err[256] = "";
	const char	*text = "Name: X\nthis is not a header\n\nbody\n";

	(void)state;
	assert_null(tmpl_parse("x", text, strlen(text), 0, err, sizeof(err)));
	assert_true(err[0] != '\0');
}

static void
test_free_null(void **state)
{
	(void)state;
	tmpl_free(NULL);
	assert_true(1);	/* reached: tmpl_free(NULL) is a no-op */
}

static void
test_load_found(void **state)
{
	struct fixture	*f = *state;
	struct tmpl	*t;

	put(f, "acme", "email", "welcome.tmpl", email_text);
	put(f, "acme", "ott", "shipped.tmpl", ott_text);
	t = load_ok(f, "acme", TMPL_EMAIL, "welcome");
	assert_string_equal(t->id, "welcome");
	assert_string_equal(t->subject, "Hello {{name}}");
	assert_memory_equal(t->body, email_body, strlen(email_body));
	tmpl_free(t);

	t = load_ok(f, "acme", TMPL_OTT, "shipped");
	assert_int_equal(t->parameters, 2);
	assert_string_equal(t->provider_template, "order_shipped");
	tmpl_free(t);
}

static void
test_load_created_from_file_mtime(void **state)
{
	struct fixture	*f = *state;
	struct tmpl	*t;

	put(f, "acme", "email", "nodate.tmpl",
	    "Name: No date\nSubject: s\nFrom: a@b.example\n\nbody\n");
	set_mtime(f, "acme", "email", "nodate.tmpl", (time_t)1700000000);
	t = load_ok(f, "acme", TMPL_EMAIL, "nodate");
	assert_string_equal(t->created, "2023-11-14T22:13:20Z");
	tmpl_free(t);
}

static void
test_load_not_found(void **state)
{
	struct fixture	*f = *state;

	put(f, "acme", "email", "welcome.tmpl", email_text);
	put(f, "acme", "ott", "shipped.tmpl", ott_text);
	put(f, "other", "email", "theirs.tmpl", email_text);

	load_fails(f, "acme", TMPL_EMAIL, "nope", MSG_PERMFAIL);
	/* The wrong kind. */
	load_fails(f, "acme", TMPL_OTT, "welcome", MSG_PERMFAIL);
	/* Another client's template is not owned. */
	load_fails(f, "acme", TMPL_EMAIL, "theirs", MSG_PERMFAIL);
	/* A client with no directory at all. */
	load_fails(f, "ghost", TMPL_EMAIL, "welcome", MSG_PERMFAIL);
}

/* The cache answers as tmpl_load, and shares while the file is the same. */
static void
test_cache(void **state)
{
	struct fixture		*f = *state;
	struct tmpl_cache	*c;
	struct tmpl		*a, *b;
	enum msg_status		 st;
	char			 err[256], id[32], path[1024];
	size_t			 i;

	assert_non_null(c = calloc(1, sizeof(*c)));
	put(f, "acme", "email", "welcome.tmpl", email_text);
	a = tmpl_cache_load(c, f->root, "acme", TMPL_EMAIL, "welcome", &st,
	    err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(st, MSG_OK);
	b = tmpl_cache_load(c, f->root, "acme", TMPL_EMAIL, "welcome", &st,
	    err, sizeof(err));
	assert_ptr_equal(a, b);		/* a hit: the same template */
	assert_int_equal(c->n, 1);
	tmpl_free(b);
	/* Changed on disk (its size and times): read again. */
	put(f, "acme", "email", "welcome.tmpl",
	    "Name: W\nSubject: New {{name}}\nFrom: a@b.example\n\nnew body\n");
	b = tmpl_cache_load(c, f->root, "acme", TMPL_EMAIL, "welcome", &st,
	    err, sizeof(err));
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_string_equal(b->subject, "New {{name}}");
	/* The old one lives on with its holder. */
	assert_string_equal(a->subject, "Hello {{name}}");
	tmpl_free(a);
	tmpl_free(b);
	/* Removed: not found, as tmpl_load says, and no longer kept. */
	snprintf(path, sizeof(path), "%s/acme/email/welcome.tmpl", f->root);
	assert_int_equal(unlink(path), 0);
	assert_null(tmpl_cache_load(c, f->root, "acme", TMPL_EMAIL, "welcome",
	    &st, err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	assert_int_equal(c->n, 0);
	/* Invalid ids never reach a path; malformed is a tempfail. */
	assert_null(tmpl_cache_load(c, f->root, "acme", TMPL_EMAIL, "../x",
	    &st, err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	put(f, "acme", "email", "bad.tmpl", "no header line\n");
	assert_null(tmpl_cache_load(c, f->root, "acme", TMPL_EMAIL, "bad",
	    &st, err, sizeof(err)));
	assert_int_equal(st, MSG_TEMPFAIL);
	assert_int_equal(c->n, 0);
	/* Bounded: past TMPL_CACHE_MAX the least recently used goes. */
	for (i = 0; i < TMPL_CACHE_MAX + 5; i++) {
		snprintf(id, sizeof(id), "t%zu.tmpl", i);
		put(f, "acme", "ott", id, ott_text);
		snprintf(id, sizeof(id), "t%zu", i);
		a = tmpl_cache_load(c, f->root, "acme", TMPL_OTT, id, &st,
		    err, sizeof(err));
		assert_non_null(a);
		tmpl_free(a);
		/* t0 is used all along: it stays. */
		a = tmpl_cache_load(c, f->root, "acme", TMPL_OTT, "t0", &st,
		    err, sizeof(err));
		assert_non_null(a);
		tmpl_free(a);
	}
	assert_int_equal(c->n, TMPL_CACHE_MAX);
	for (i = 0; i < c->n; i++)
		assert_true(strstr(c->v[i].path, "/t1.tmpl") == NULL);
	for (i = 0; i < c->n && strstr(c->v[i].path, "/t0.tmpl") == NULL; i++)
		;
	assert_true(i < c->n);
	tmpl_cache_free(c);
	free(c);
}

static void
test_load_invalid_id_no_path_built(void **state)
{
	struct fixture	*f = *state;

	/*
	 * Files that an unchecked id would reach: a traversal into ott/,
	 * a dot file, and a file named with a slash-free "..".
	 */
	put(f, "acme", "ott", "shipped.tmpl", ott_text);
	put(f, "acme", "email", ".hidden.tmpl", email_text);
	put(f, "other", "email", "theirs.tmpl", email_text);

	load_fails(f, "acme", TMPL_EMAIL, "../ott/shipped", MSG_PERMFAIL);
	load_fails(f, "acme", TMPL_EMAIL, ".hidden", MSG_PERMFAIL);
	load_fails(f, "acme", TMPL_EMAIL, "../../other/email/theirs",
	    MSG_PERMFAIL);
	load_fails(f, "acme", TMPL_EMAIL, "", MSG_PERMFAIL);
}

static void
test_load_malformed_is_tempfail(void **state)
{
	struct fixture	*f = *state;

	put(f, "acme", "email", "broken.tmpl",
	    "Name: X\nnot a header line\n\nbody\n");
	load_fails(f, "acme", TMPL_EMAIL, "broken", MSG_TEMPFAIL);
}

static void
check_summary(const json_t *s, const char *id, const char *name,
    const char *subject, const char *from, const char *tags,
    const char *created)
{
	assert_true(json_is_object(s));
	assert_string_equal(json_string_value(json_object_get(s, "id")), id);
	assert_string_equal(json_string_value(json_object_get(s, "name")),
	    name);
	assert_string_equal(json_string_value(json_object_get(s, "subject")),
	    subject);
	assert_string_equal(json_string_value(json_object_get(s,
	    "fromAddress")), from);
	assert_string_equal(json_string_value(json_object_get(s, "tags")),
	    tags);
	assert_string_equal(json_string_value(json_object_get(s,
	    "createdDate")), created);
}

static void
test_list_email_sorted(void **state)
{
	struct fixture	*f = *state;
	json_t		*a;

	put(f, "acme", "email", "b.tmpl",
	    "Name: Bee\nSubject: sb\nFrom: b@example.com\nTags: t\n"
	    "Created: 2026-01-02T00:00:00Z\n\nB\n");
	put(f, "acme", "email", "a.tmpl",
	    "Name: Ay\nSubject: sa\nFrom: a@example.com\nTags: x,y\n"
	    "Created: 2026-03-01T00:00:00Z\n\nA\n");
	put(f, "acme", "email", "c.tmpl",
	    "Name: Cee\nSubject: sc\nFrom: c@example.com\nTags: c\n"
	    "Created: 2025-05-05T05:05:05Z\n\nC\n");
	/* Same date as b: the id breaks the tie. */
	put(f, "acme", "email", "aa.tmpl",
	    "Name: AA\nSubject: saa\nFrom: aa@example.com\nTags: z\n"
	    "Created: 2026-01-02T00:00:00Z\n\nAA\n");
	/* Not listed: OTT, another client's, not a .tmpl. */
	put(f, "acme", "ott", "shipped.tmpl", ott_text);
	put(f, "other", "email", "theirs.tmpl", email_text);
	put(f, "acme", "email", "README", "just notes\n");

	a = tmpl_list_email(f->root, "acme");
	assert_non_null(a);
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 4);
	check_summary(json_array_get(a, 0), "c", "Cee", "sc", "c@example.com",
	    "c", "2025-05-05T05:05:05Z");
	check_summary(json_array_get(a, 1), "aa", "AA", "saa",
	    "aa@example.com", "z", "2026-01-02T00:00:00Z");
	check_summary(json_array_get(a, 2), "b", "Bee", "sb", "b@example.com",
	    "t", "2026-01-02T00:00:00Z");
	check_summary(json_array_get(a, 3), "a", "Ay", "sa", "a@example.com",
	    "x,y", "2026-03-01T00:00:00Z");
	json_decref(a);
}

static void
test_list_email_mtime_created(void **state)
{
	struct fixture	*f = *state;
	json_t		*a;

	put(f, "acme", "email", "old.tmpl",
	    "Name: Old\nSubject: s\nFrom: o@example.com\nTags: t\n\nO\n");
	set_mtime(f, "acme", "email", "old.tmpl", (time_t)1700000000);
	put(f, "acme", "email", "new.tmpl",
	    "Name: New\nSubject: s\nFrom: n@example.com\nTags: t\n"
	    "Created: 2026-01-02T00:00:00Z\n\nN\n");
	a = tmpl_list_email(f->root, "acme");
	assert_non_null(a);
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(a, 0), "id")), "old");
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(a, 0), "createdDate")), "2023-11-14T22:13:20Z");
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(a, 1), "id")), "new");
	json_decref(a);
}

static void
test_list_email_skips_malformed(void **state)
{
	struct fixture	*f = *state;
	json_t		*a;

	put(f, "acme", "email", "good.tmpl", email_text);
	put(f, "acme", "email", "bad.tmpl", "Name: X\nno colon here\n\nB\n");
	a = tmpl_list_email(f->root, "acme");
	assert_non_null(a);
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(a, 0), "id")), "good");
	json_decref(a);
}

static void
test_list_email_absent_client(void **state)
{
	struct fixture	*f = *state;
	json_t		*a;

	put(f, "other", "email", "theirs.tmpl", email_text);
	a = tmpl_list_email(f->root, "ghost");
	assert_non_null(a);
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	/* A client with only OTT templates has no email ones. */
	put(f, "ottonly", "ott", "shipped.tmpl", ott_text);
	a = tmpl_list_email(f->root, "ottonly");
	assert_non_null(a);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
}

/* tmpl_merge */

static char *
merge_ok(const char *text, const json_t *values, int html)
{
	char	*out, missing[256];
	size_t	 len = 12345;

	out = tmpl_merge(text, strlen(text), values, html, &len, missing,
	    sizeof(missing));
	if (out == NULL)
		fail_msg("tmpl_merge failed; missing: %s", missing);
	assert_int_equal(len, strlen(out));
	return out;
}

static void
test_merge_object(void **state)
{
	json_t	*v;
	char	*out;

	(void)state;
	v = json_pack("{s:s,s:s}", "name", "Ann", "code", "42");
	out = merge_ok("Hello {{name}}, your code is {{ code }}.", v, 0);
	assert_string_equal(out, "Hello Ann, your code is 42.");
	free(out);
	/* The same marker twice. */
	out = merge_ok("{{name}}{{name}}", v, 0);
	assert_string_equal(out, "AnnAnn");
	free(out);
	/* No markers: unchanged. */
	out = merge_ok("plain text", v, 0);
	assert_string_equal(out, "plain text");
	free(out);
	json_decref(v);
}

static void
test_merge_array(void **state)
{
	json_t	*v;
	char	*out, missing[256];
	size_t	 len;

	(void)state;
	v = json_pack("[s,s]", "A1", "Monday");
	out = merge_ok("Order {{1}} ships on {{2}}.", v, 0);
	assert_string_equal(out, "Order A1 ships on Monday.");
	free(out);
	/* 1-based: {{0}} and {{3}} have no value. */
	assert_null(tmpl_merge("{{3}}", 5, v, 0, &len, missing,
	    sizeof(missing)));
	assert_string_equal(missing, "3");
	assert_null(tmpl_merge("{{0}}", 5, v, 0, &len, missing,
	    sizeof(missing)));
	assert_string_equal(missing, "0");
	json_decref(v);
}

static void
test_merge_html_escapes(void **state)
{
	json_t		*v;
	char		*out;
	const char	*q;

	(void)state;
	v = json_pack("{s:s}", "name", "<b>Tom & \"Jerry\" O'Neil</b>");
	out = merge_ok("<p>{{name}}</p>", v, 1);
	/* The template's own markup stays; the value's is escaped. */
	assert_true(strncmp(out, "<p>", 3) == 0);
	assert_true(strcmp(out + strlen(out) - 4, "</p>") == 0);
	assert_null(strstr(out, "<b>"));
	assert_null(strstr(out, "</b>"));
	assert_null(strchr(out, '"'));
	assert_non_null(strstr(out, "&lt;b&gt;Tom &amp; "));
	assert_non_null(strstr(out, "&quot;Jerry&quot;"));
	q = strstr(out, "O&");
	assert_non_null(q);
	assert_true(strncmp(q, "O&#39;Neil", 10) == 0 ||
	    strncmp(q, "O&#x27;Neil", 11) == 0 ||
	    strncmp(q, "O&apos;Neil", 11) == 0);
	free(out);
	/* Without html, values go in as they are. */
	out = merge_ok("{{name}}", v, 0);
	assert_string_equal(out, "<b>Tom & \"Jerry\" O'Neil</b>");
	free(out);
	json_decref(v);
}

static void
test_merge_missing_named_once(void **state)
{
	json_t	*v;
	char	 missing[256];
	size_t	 len;

	(void)state;
	v = json_pack("{s:s,s:i}", "b", "x", "n", 5);
	memset(missing, 'z', sizeof(missing));
	assert_null(tmpl_merge("{{a}} {{b}} {{a}} {{c}}", 23, v, 0, &len,
	    missing, sizeof(missing)));
	assert_string_equal(missing, "a, c");
	/* A value that is not a string is no value. */
	assert_null(tmpl_merge("{{n}}", 5, v, 0, &len, missing,
	    sizeof(missing)));
	assert_string_equal(missing, "n");
	json_decref(v);
}

static void
test_merge_not_markers(void **state)
{
	json_t	*v;
	char	*out;

	(void)state;
	v = json_pack("{s:s}", "a", "X");
	out = merge_ok("{{ }} and {{a b}} and {a} and {{a", v, 0);
	assert_string_equal(out, "{{ }} and {{a b}} and {a} and {{a");
	free(out);
	json_decref(v);
}

static void
test_merge_single_pass(void **state)
{
	json_t	*v;
	char	*out;

	(void)state;
	/* A value that looks like a marker is not expanded again. */
	v = json_pack("{s:s,s:s}", "a", "{{b}}", "b", "secret");
	out = merge_ok("[{{a}}]", v, 0);
	assert_string_equal(out, "[{{b}}]");
	free(out);
	json_decref(v);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup, tu_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_valid),
		cmocka_unit_test(test_parse_email),
		cmocka_unit_test(test_parse_ott),
		cmocka_unit_test(test_parse_created_from_mtime),
		cmocka_unit_test(test_parse_created_is_utc),
		cmocka_unit_test(test_parse_empty_body),
		cmocka_unit_test(test_parse_body_keeps_colons_and_blank_lines),
		cmocka_unit_test(test_parse_bad_header_line),
		cmocka_unit_test(test_free_null),
		T(test_load_found),
		T(test_load_created_from_file_mtime),
		T(test_load_not_found),
		T(test_load_invalid_id_no_path_built),
		T(test_cache),
		T(test_load_malformed_is_tempfail),
		T(test_list_email_sorted),
		T(test_list_email_mtime_created),
		T(test_list_email_skips_malformed),
		T(test_list_email_absent_client),
		cmocka_unit_test(test_merge_object),
		cmocka_unit_test(test_merge_array),
		cmocka_unit_test(test_merge_html_escapes),
		cmocka_unit_test(test_merge_missing_named_once),
		cmocka_unit_test(test_merge_not_markers),
		cmocka_unit_test(test_merge_single_pass),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
