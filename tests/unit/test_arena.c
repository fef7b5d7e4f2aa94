/*
 * test_arena.c: the allocator msgspool-fcgi's workers give jansson
 * (fcgi/arena.h; msgspool-fcgi(8), Memory): alone, then as jansson's
 * over requests like a worker's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "arena.h"

/* Off, as outside a request: malloc's, whatever the size. */
static void
test_off_is_malloc(void **state)
{
	struct arena	 a;
	char		*p;

	(void)state;
	arena_init(&a);
	p = arena_alloc(&a, 32);
	assert_non_null(p);
	assert_false(arena_owns(&a, p));
	assert_int_equal(arena_mapped(&a), 0);
	memset(p, 'x', 32);
	arena_free(&a, p);
	arena_free(&a, NULL);
	arena_release(&a);
}

/*
 * On: small blocks in the first chunk, aligned for any type, apart from
 * each other; a block over ARENA_BIG is malloc's.
 */
static void
test_small_and_big(void **state)
{
	struct arena	 a;
	char		*p[100], *big;
	size_t		 i;

	(void)state;
	arena_init(&a);
	arena_begin(&a);
	for (i = 0; i < 100; i++) {
		p[i] = arena_alloc(&a, i + 1);
		assert_non_null(p[i]);
		assert_true(arena_owns(&a, p[i]));
		assert_int_equal((uintptr_t)p[i] % alignof(max_align_t), 0);
		memset(p[i], (int)i, i + 1);
	}
	for (i = 0; i < 100; i++)
		assert_int_equal((unsigned char)p[i][i], i);
	assert_int_equal(arena_mapped(&a), ARENA_FIRST);
	big = arena_alloc(&a, ARENA_BIG + 1);
	assert_non_null(big);
	assert_false(arena_owns(&a, big));
	memset(big, 'b', ARENA_BIG + 1);
	arena_free(&a, big);
	/* Size 0: a block of its own all the same. */
	assert_non_null(arena_alloc(&a, 0));
	arena_end(&a);
	arena_release(&a);
}

/*
 * The last block freed gives its room back (a key freed right after it
 * was set); any other stays where it is, its neighbours untouched.
 */
static void
test_last_freed(void **state)
{
	struct arena	 a;
	char		*x, *y, *z;

	(void)state;
	arena_init(&a);
	arena_begin(&a);
	x = arena_alloc(&a, 40);
	y = arena_alloc(&a, 40);
	memset(x, 'x', 40);
	memset(y, 'y', 40);
	arena_free(&a, y);
	z = arena_alloc(&a, 24);
	assert_ptr_equal(z, y);
	/* x is not the last: freed, it keeps its room and bytes. */
	arena_free(&a, x);
	y = arena_alloc(&a, 40);
	assert_true(y != x);
	assert_int_equal(x[39], 'x');
	arena_end(&a);
	arena_release(&a);
}

/*
 * How jansson grows a buffer (strbuffer, its hash tables): no realloc, a
 * new block, the old bytes copied, then the old block freed.  Each step
 * keeps the bytes so far.
 */
static void
test_grow_by_copy(void **state)
{
	struct arena	 a;
	char		*old, *nw;
	size_t		 size, i;

	(void)state;
	arena_init(&a);
	arena_begin(&a);
	old = arena_alloc(&a, 16);
	memset(old, 'a', 16);
	for (size = 16; size < 4 * ARENA_BIG; size *= 2) {
		nw = arena_alloc(&a, size * 2);
		assert_non_null(nw);
		memcpy(nw, old, size);
		memset(nw + size, 'a', size);
		arena_free(&a, old);
		old = nw;
		for (i = 0; i < size * 2; i++)
			assert_int_equal(old[i], 'a');
	}
	arena_free(&a, old);
	arena_end(&a);
	arena_release(&a);
}

/*
 * A large request maps more chunks, each twice the one before; its end
 * unmaps them and keeps the first, emptied, which the small requests
 * after it use alone.
 */
static void
test_large_then_small(void **state)
{
	struct arena	 a;
	char		*first, *p;
	size_t		 i, n = 0;

	(void)state;
	arena_init(&a);
	arena_begin(&a);
	first = arena_alloc(&a, 64);
	for (i = 0; i < 200000; i++) {
		p = arena_alloc(&a, 48);
		assert_non_null(p);
		assert_true(arena_owns(&a, p));
		memset(p, 'L', 48);
		n += 48;
	}
	assert_true(arena_mapped(&a) > n);
	assert_true(arena_mapped(&a) <= ARENA_FIRST + 2 * n + ARENA_CHUNK_MAX);
	arena_end(&a);
	assert_int_equal(arena_mapped(&a), ARENA_FIRST);
	for (i = 0; i < 1000; i++) {
		arena_begin(&a);
		p = arena_alloc(&a, 64);
		/* The first chunk again, from its start. */
		assert_ptr_equal(p, first);
		assert_non_null(arena_alloc(&a, 1000));
		arena_end(&a);
		assert_int_equal(arena_mapped(&a), ARENA_FIRST);
	}
	arena_release(&a);
	assert_int_equal(arena_mapped(&a), 0);
}

/*
 * A block malloc'd outside a request (a cache's) freed in one goes to
 * free(); a block of a request is never handed to free() (it would
 * abort).
 */
static void
test_foreign(void **state)
{
	struct arena	 a;
	char		*before, *in;

	(void)state;
	arena_init(&a);
	before = arena_alloc(&a, 100);
	assert_false(arena_owns(&a, before));
	arena_begin(&a);
	in = arena_alloc(&a, 100);
	assert_true(arena_owns(&a, in));
	arena_free(&a, before);
	arena_free(&a, in);
	arena_end(&a);
	/* After the request: a block of it freed late is the arena's still. */
	arena_begin(&a);
	in = arena_alloc(&a, 100);
	arena_end(&a);
	arena_free(&a, in);
	arena_release(&a);
}

/* jansson's allocator, as a worker sets it. */
static struct arena	js;

static void *
js_malloc(size_t n)
{
	return arena_alloc(&js, n);
}

static void
js_free(void *p)
{
	arena_free(&js, p);
}

/* A spool document of about 1 KiB, as msgspool writes one. */
static const char doc_text[] =
    "{\n  \"attempts\": 1,\n  \"channel\": \"sms\",\n"
    "  \"client\": \"c0\",\n  \"created\": \"2026-11-21T19:21:25Z\",\n"
    "  \"events\": [\n    {\n      \"at\": \"2026-11-21T19:21:25Z\",\n"
    "      \"status\": \"queued\"\n    },\n    {\n"
    "      \"at\": \"2026-11-21T19:21:25Z\",\n      \"route\": \"sms\",\n"
    "      \"status\": \"sent\"\n    }\n  ],\n"
    "  \"id\": \"01M7ZRWSYQGD9N89VEPSPTXPVF\",\n  \"lastError\": null,\n"
    "  \"message\": {\n    \"body\": \"Your code is 123456\",\n"
    "    \"reference\": \"order-0-1\",\n    \"to\": \"+4915100000972\"\n"
    "  },\n  \"nextAttempt\": \"2026-11-21T19:21:25Z\",\n"
    "  \"providerReply\": {\n    \"sid\": "
    "\"SM90bb78cdf58efb6249f81cbe60a35722\",\n"
    "    \"status\": \"queued\"\n  },\n  \"version\": 1\n}\n";

/*
 * Requests of a worker under jansson: values made before any request
 * (malloc's) read, changed and freed in one; documents parsed, built,
 * dumped and freed; a body with a string larger than ARENA_BIG; a
 * batch of 1,000.  The text of each is the one jansson gives under
 * malloc; after each request, one chunk is left.
 */
static void
test_jansson(void **state)
{
	json_t		*kept, *old, *doc, *st, *batch, *one;
	char		*want, *got, *big;
	size_t		 i, j;

	(void)state;
	/* What jansson writes with malloc, to compare. */
	doc = json_loads(doc_text, 0, NULL);
	assert_non_null(doc);
	want = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(doc);
	arena_init(&js);
	json_set_alloc_funcs(js_malloc, js_free);
	kept = json_pack("{s:s, s:[i, i]}", "name", "kept", "list", 1, 2);
	old = json_string("freed in a request");
	assert_false(arena_owns(&js, kept));
	for (i = 0; i < 500; i++) {
		arena_begin(&js);
		doc = json_loadb(doc_text, sizeof(doc_text) - 1,
		    JSON_REJECT_DUPLICATES, NULL);
		assert_non_null(doc);
		st = json_pack("{s:O, s:s, s:O}", "id", json_object_get(doc,
		    "id"), "status", "sent", "kept", kept);
		assert_non_null(st);
		got = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
		assert_string_equal(got, want);
		js_free(got);
		json_decref(st);
		json_decref(doc);
		if (i == 0) {
			json_decref(old);
			old = NULL;
		}
		arena_end(&js);
		assert_int_equal(arena_mapped(&js), ARENA_FIRST);
	}
	/* The value made before the requests is whole. */
	assert_string_equal(json_string_value(json_object_get(kept, "name")),
	    "kept");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(
	    kept, "list"), 1)), 2);
	/* A body with a long string: malloc's, given back by its free. */
	big = malloc(4 * ARENA_BIG + 32);
	assert_non_null(big);
	memset(big, 'z', 4 * ARENA_BIG + 32);
	memcpy(big, "[\"", 2);
	memcpy(big + 4 * ARENA_BIG + 29, "\"]", 3);
	arena_begin(&js);
	one = json_loads(big, 0, NULL);
	assert_non_null(one);
	assert_int_equal(json_string_length(json_array_get(one, 0)),
	    4 * ARENA_BIG + 27);
	assert_false(arena_owns(&js, json_string_value(json_array_get(one,
	    0))));
	json_decref(one);
	arena_end(&js);
	free(big);
	/* A batch of 1,000: more chunks, then one again. */
	arena_begin(&js);
	batch = json_array();
	for (j = 0; j < 1000; j++) {
		one = json_loadb(doc_text, sizeof(doc_text) - 1, 0, NULL);
		assert_non_null(one);
		json_array_append_new(batch, one);
	}
	assert_true(arena_mapped(&js) > ARENA_FIRST);
	got = json_dumps(json_array_get(batch, 999), JSON_COMPACT |
	    JSON_SORT_KEYS);
	assert_string_equal(got, want);
	js_free(got);
	json_decref(batch);
	arena_end(&js);
	assert_int_equal(arena_mapped(&js), ARENA_FIRST);
	json_decref(kept);
	json_set_alloc_funcs(malloc, free);
	arena_release(&js);
	free(want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_is_malloc),
		cmocka_unit_test(test_small_and_big),
		cmocka_unit_test(test_last_freed),
		cmocka_unit_test(test_grow_by_copy),
		cmocka_unit_test(test_large_then_small),
		cmocka_unit_test(test_foreign),
		cmocka_unit_test(test_jansson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
