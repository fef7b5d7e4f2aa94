/*
 * test_tmpl_load.c: unit tests for lib/content/tmpl.c (msgspool.conf(5),
 * templates): loading a template from its file, the cache and the list
 * of a client's email templates.
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

#include "base/msgspool.h"
#include "content/tmpl.h"
#include "testutil.h"
#include "tmplsample.h"

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

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, setup, tu_teardown)
	const struct CMUnitTest tests[] = {
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
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
