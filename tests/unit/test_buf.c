/*
 * test_buf.c: unit tests for lib/base/buf.c, the growable NUL-terminated
 * byte buffer (STYLE habit 7: bodies travel as pointer + length).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#define MANY	100000

static void
test_zero_struct_is_empty(void **state)
{
	struct buf	 b = { 0 };

	(void)state;
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	/* An empty append still gives a NUL-terminated string. */
	assert_int_equal(buf_add(&b, "", 0), 0);
	assert_non_null(b.p);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.p, "");
	assert_true(b.cap >= 1);
	assert_int_equal(b.failed, 0);
	buf_free(&b);
}

static void
test_add_puts_putc(void **state)
{
	struct buf	 b = { 0 };

	(void)state;
	assert_int_equal(buf_add(&b, "abcdef", 3), 0);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.p, "abc");
	assert_int_equal(buf_puts(&b, "-xyz"), 0);
	assert_int_equal(b.len, 7);
	assert_string_equal(b.p, "abc-xyz");
	assert_int_equal(buf_putc(&b, '!'), 0);
	assert_int_equal(b.len, 8);
	assert_string_equal(b.p, "abc-xyz!");
	assert_int_equal(buf_puts(&b, ""), 0);
	assert_int_equal(b.len, 8);
	assert_string_equal(b.p, "abc-xyz!");
	assert_true(b.cap > b.len);
	assert_int_equal(b.failed, 0);
	buf_free(&b);
}

/* MANY single-byte appends: every byte kept, always terminated. */
static void
test_growth_putc(void **state)
{
	struct buf	 b = { 0 };
	size_t		 i;

	(void)state;
	for (i = 0; i < MANY; i++) {
		assert_int_equal(buf_putc(&b, (char)('a' + i % 26)), 0);
		assert_int_equal(b.len, i + 1);
		assert_true(b.cap > b.len);
		assert_int_equal(b.p[b.len], '\0');
	}
	assert_int_equal(strlen(b.p), MANY);
	for (i = 0; i < MANY; i++)
		if (b.p[i] != (char)('a' + i % 26))
			fail_msg("byte %zu is 0x%02x", i,
			    (unsigned char)b.p[i]);
	assert_int_equal(b.failed, 0);
	buf_free(&b);
}

/* Chunks of uneven sizes, mixing buf_add and buf_puts. */
static void
test_growth_chunks(void **state)
{
	struct buf	 b = { 0 };
	char		*want, chunk[97];
	size_t		 i, n, off = 0;

	(void)state;
	want = malloc(MANY + 1);
	assert_non_null(want);
	for (i = 0; i < sizeof(chunk) - 1; i++)
		chunk[i] = (char)('0' + i % 10);
	chunk[sizeof(chunk) - 1] = '\0';
	for (i = 0; off < MANY; i++) {
		n = 1 + (i * 7) % (sizeof(chunk) - 1);
		if (n > MANY - off)
			n = MANY - off;
		if (i % 2 == 0 || n != sizeof(chunk) - 1) {
			assert_int_equal(buf_add(&b, chunk, n), 0);
		} else {
			assert_int_equal(buf_puts(&b, chunk), 0);
		}
		memcpy(want + off, chunk, n);
		off += n;
		assert_int_equal(b.len, off);
		assert_int_equal(b.p[b.len], '\0');
	}
	want[MANY] = '\0';
	assert_int_equal(b.len, MANY);
	assert_memory_equal(b.p, want, MANY + 1);
	assert_true(b.cap > MANY);
	free(want);
	buf_free(&b);
}

/* One append larger than the doubling steps. */
static void
test_growth_one_big_add(void **state)
{
	struct buf	 b = { 0 };
	char		*big;

	(void)state;
	big = malloc(MANY);
	assert_non_null(big);
	memset(big, 'z', MANY);
	assert_int_equal(buf_putc(&b, 'a'), 0);
	assert_int_equal(buf_add(&b, big, MANY), 0);
	assert_int_equal(b.len, MANY + 1);
	assert_true(b.cap >= MANY + 2);
	assert_int_equal(b.p[0], 'a');
	assert_memory_equal(b.p + 1, big, MANY);
	assert_int_equal(b.p[MANY + 1], '\0');
	free(big);
	buf_free(&b);
}

static void
test_embedded_nul(void **state)
{
	struct buf	 b = { 0 };
	static const char data[] = { 'a', '\0', 'b', '\0', '\0', 'c' };

	(void)state;
	assert_int_equal(buf_add(&b, data, sizeof(data)), 0);
	assert_int_equal(b.len, sizeof(data));
	assert_memory_equal(b.p, data, sizeof(data));
	assert_int_equal(b.p[sizeof(data)], '\0');
	assert_int_equal(buf_putc(&b, '\0'), 0);
	assert_int_equal(b.len, sizeof(data) + 1);
	assert_int_equal(b.p[sizeof(data)], '\0');
	assert_int_equal(b.p[sizeof(data) + 1], '\0');
	assert_int_equal(buf_puts(&b, "d"), 0);
	assert_int_equal(b.len, sizeof(data) + 2);
	assert_memory_equal(b.p, "a\0b\0\0c\0d", sizeof(data) + 3);
	buf_free(&b);
}

static void
test_take(void **state)
{
	struct buf	 b = { 0 };
	char		*s;
	size_t		 len = 12345;

	(void)state;
	assert_int_equal(buf_puts(&b, "hello"), 0);
	assert_int_equal(buf_add(&b, "\0world", 6), 0);
	s = buf_take(&b, &len);
	assert_non_null(s);
	assert_int_equal(len, 11);
	assert_memory_equal(s, "hello\0world", 12);
	/* The struct is reset and owns nothing. */
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.failed, 0);
	/* It is usable again, independently of the string handed over. */
	assert_int_equal(buf_puts(&b, "again"), 0);
	assert_string_equal(b.p, "again");
	assert_true(b.p != s);
	assert_memory_equal(s, "hello\0world", 12);
	free(s);
	buf_free(&b);
}

static void
test_take_null_len(void **state)
{
	struct buf	 b = { 0 };
	char		*s;

	(void)state;
	assert_int_equal(buf_puts(&b, "abc"), 0);
	s = buf_take(&b, NULL);
	assert_non_null(s);
	assert_string_equal(s, "abc");
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	free(s);
}

static void
test_take_empty(void **state)
{
	struct buf	 b = { 0 };
	char		*s;
	size_t		 len = 12345;

	(void)state;
	s = buf_take(&b, &len);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	free(s);

	/* Taken twice: the second is a fresh "" too. */
	s = buf_take(&b, &len);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
}

static void
test_take_failed(void **state)
{
	struct buf	 b = { 0 };
	size_t		 len = 12345;

	(void)state;
	assert_int_equal(buf_puts(&b, "partial"), 0);
	/* As after an allocation failure. */
	b.failed = 1;
	assert_int_equal(buf_puts(&b, "more"), -1);
	assert_int_equal(buf_putc(&b, 'x'), -1);
	assert_int_equal(buf_add(&b, "y", 1), -1);
	assert_int_equal(b.len, 7);
	assert_null(buf_take(&b, &len));
	/* The memory was released and the struct reset. */
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.failed, 0);
}

static void
test_free_then_reuse(void **state)
{
	struct buf	 b = { 0 };
	size_t		 i;

	(void)state;
	for (i = 0; i < 1000; i++)
		assert_int_equal(buf_puts(&b, "0123456789"), 0);
	assert_int_equal(b.len, 10000);
	buf_free(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.failed, 0);

	assert_int_equal(buf_puts(&b, "xy"), 0);
	assert_int_equal(b.len, 2);
	assert_string_equal(b.p, "xy");
	buf_free(&b);

	/* Freeing an empty or already freed buffer is harmless. */
	buf_free(&b);
	buf_free(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
}

/* Room made once: the appends within it move nothing. */
static void
test_reserve(void **state)
{
	struct buf	 b = { 0 };
	const char	*p;
	size_t		 i;

	(void)state;
	assert_int_equal(buf_reserve(&b, 10000), 0);
	assert_true(b.cap >= 10001);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.p, "");
	p = b.p;
	for (i = 0; i < 10000; i++)
		assert_int_equal(buf_putc(&b, 'x'), 0);
	assert_ptr_equal(b.p, p);
	assert_int_equal(b.len, 10000);
	assert_int_equal(b.p[10000], '\0');
	/* Less than there is: nothing changes. */
	assert_int_equal(buf_reserve(&b, 0), 0);
	assert_ptr_equal(b.p, p);
	buf_free(&b);
}

/*
 * buf_json: json_dumps's text, byte for byte, appended after what the
 * buffer holds, with each flag the tree uses; a value of the wrong kind
 * without JSON_ENCODE_ANY fails as json_dumps does.
 */
static void
test_json(void **state)
{
	static const size_t flags[] = { JSON_COMPACT, JSON_COMPACT |
	    JSON_ENCODE_ANY, JSON_INDENT(2) | JSON_SORT_KEYS, JSON_INDENT(2) |
	    JSON_PRESERVE_ORDER, 0 };
	struct buf	 b = { 0 };
	json_t		*v, *s;
	char		*want;
	size_t		 i, j;

	(void)state;
	v = json_pack("{s:s, s:i, s:n, s:[s, {s:b}], s:f, s:s}", "zeta",
	    "caf\xc3\xa9 \"quoted\" \\ </tag>", "alpha", 42, "none", "list",
	    "x", "nested", 1, "real", 1.5, "ctl", "tab\there\nnl");
	assert_non_null(v);
	/* Larger than the buffer's first steps, to cross its growth. */
	for (i = 0; i < 200; i++) {
		char	 key[16];

		snprintf(key, sizeof(key), "k%03zu", i);
		json_object_set_new(v, key, json_integer((json_int_t)i));
	}
	for (j = 0; j < sizeof(flags) / sizeof(flags[0]); j++) {
		want = json_dumps(v, flags[j]);
		assert_non_null(want);
		assert_int_equal(buf_puts(&b, "before:"), 0);
		assert_int_equal(buf_json(&b, v, flags[j]), 0);
		assert_int_equal(b.len, strlen("before:") + strlen(want));
		assert_string_equal(b.p + strlen("before:"), want);
		free(want);
		buf_free(&b);
	}
	s = json_string("just a string");
	assert_int_equal(buf_json(&b, s, JSON_COMPACT), -1);
	assert_int_equal(buf_json(&b, s, JSON_COMPACT | JSON_ENCODE_ANY), 0);
	assert_string_equal(b.p, "\"just a string\"");
	buf_free(&b);
	b.failed = 1;
	assert_int_equal(buf_json(&b, v, JSON_COMPACT), -1);
	buf_free(&b);
	json_decref(s);
	json_decref(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_struct_is_empty),
		cmocka_unit_test(test_add_puts_putc),
		cmocka_unit_test(test_growth_putc),
		cmocka_unit_test(test_growth_chunks),
		cmocka_unit_test(test_growth_one_big_add),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_take_null_len),
		cmocka_unit_test(test_take_empty),
		cmocka_unit_test(test_take_failed),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_free_then_reuse),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
