/*
 * test_valid.c: unit tests for lib/base/valid.c (the field rules of
 * conf/openapi.yaml): the validators of a string.  valid_error,
 * valid_object and valid_batch: test_valid_object.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/valid.h"

/* Validators on C strings. */
#define OK(fn, s)	check_ok(fn, s)
#define BAD(fn, s)	check_bad(fn, s)

static void
check_ok(valid_fn fn, const char *s)
{
	const char	*m;

	m = fn(s, strlen(s));
	if (m != NULL)
		fail_msg("\"%s\" rejected: %s", s, m);
}

static void
check_bad(valid_fn fn, const char *s)
{
	const char	*m;

	m = fn(s, strlen(s));
	if (m == NULL)
		fail_msg("\"%s\" accepted", s);
	assert_true(m[0] != '\0');
}

/* valid_utf8 */

static void
test_utf8_good(void **state)
{
	(void)state;
	assert_int_equal(valid_utf8("", 0), 0);
	assert_int_equal(valid_utf8("hello", 5), 5);
	/* é: 2 bytes, one character. */
	assert_int_equal(valid_utf8("h\xc3\xa9llo", 6), 5);
	/* €: 3 bytes. */
	assert_int_equal(valid_utf8("\xe2\x82\xac", 3), 1);
	/* U+1D11E: 4 bytes. */
	assert_int_equal(valid_utf8("\xf0\x9d\x84\x9e", 4), 1);
	/* U+10FFFF, the last code point. */
	assert_int_equal(valid_utf8("\xf4\x8f\xbf\xbf", 4), 1);
	/* U+FFFF and U+E000 (just above the surrogates). */
	assert_int_equal(valid_utf8("\xef\xbf\xbf\xee\x80\x80", 6), 2);
	assert_int_equal(valid_utf8("a\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e",
	    10), 4);
	/* Only len bytes count. */
	assert_int_equal(valid_utf8("abc\xff", 3), 3);
}

static void
test_utf8_bad(void **state)
{
	(void)state;
	/* Overlong encodings of '/' and NUL. */
	assert_int_equal(valid_utf8("\xc0\xaf", 2), -1);
	assert_int_equal(valid_utf8("\xc1\xbf", 2), -1);
	assert_int_equal(valid_utf8("\xe0\x80\xaf", 3), -1);
	assert_int_equal(valid_utf8("\xf0\x80\x80\xaf", 4), -1);
	assert_int_equal(valid_utf8("\xc0\x80", 2), -1);
	/* Surrogates U+D800, U+DFFF. */
	assert_int_equal(valid_utf8("\xed\xa0\x80", 3), -1);
	assert_int_equal(valid_utf8("\xed\xbf\xbf", 3), -1);
	/* Truncated sequences. */
	assert_int_equal(valid_utf8("\xe2\x82", 2), -1);
	assert_int_equal(valid_utf8("ab\xc3", 3), -1);
	assert_int_equal(valid_utf8("\xf0\x9d\x84", 3), -1);
	/* Continuation byte missing in the middle. */
	assert_int_equal(valid_utf8("\xe2\x41\xac", 3), -1);
	/* Lone continuation, invalid bytes. */
	assert_int_equal(valid_utf8("\x80", 1), -1);
	assert_int_equal(valid_utf8("a\xbf", 2), -1);
	assert_int_equal(valid_utf8("\xff", 1), -1);
	assert_int_equal(valid_utf8("\xfe", 1), -1);
	assert_int_equal(valid_utf8("\xf8\x88\x80\x80\x80", 5), -1);
	/* Above U+10FFFF. */
	assert_int_equal(valid_utf8("\xf4\x90\x80\x80", 4), -1);
	assert_int_equal(valid_utf8("\xf5\x80\x80\x80", 4), -1);
	/* Embedded NUL. */
	assert_int_equal(valid_utf8("a\0b", 3), -1);
	assert_int_equal(valid_utf8("\0", 1), -1);
}

/* valid_e164, valid_msisdn */

static void
test_e164(void **state)
{
	(void)state;
	OK(valid_e164, "+4915112345678");
	OK(valid_e164, "+12345678");		/* 8 digits */
	OK(valid_e164, "+123456789012345");	/* 15 digits */
	BAD(valid_e164, "+1234567");		/* 7 */
	BAD(valid_e164, "+1234567890123456");	/* 16 */
	BAD(valid_e164, "4915112345678");	/* no plus */
	BAD(valid_e164, "++4915112345678");
	BAD(valid_e164, "+49151a2345678");
	BAD(valid_e164, "+49 15112345678");
	BAD(valid_e164, "+4915112345678 ");
	BAD(valid_e164, "+");
	BAD(valid_e164, "");
	BAD(valid_e164, "49+15112345678");
	/* len bounds the check. */
	assert_null(valid_e164("+12345678XYZ", 9));
	assert_non_null(valid_e164("+12345678", 8));
	assert_non_null(valid_e164("+1234567\0""8", 10));
}

static void
test_msisdn(void **state)
{
	(void)state;
	OK(valid_msisdn, "4915112345678");
	OK(valid_msisdn, "12345678");
	OK(valid_msisdn, "123456789012345");
	BAD(valid_msisdn, "1234567");
	BAD(valid_msisdn, "1234567890123456");
	BAD(valid_msisdn, "+4915112345678");
	BAD(valid_msisdn, "49151-12345678");
	BAD(valid_msisdn, "");
	BAD(valid_msisdn, "4915112345678\n");
	assert_null(valid_msisdn("12345678abc", 8));
	assert_non_null(valid_msisdn("1234567\0""89", 10));
}

/* valid_rfc3339, rfc3339_parse */

static void
test_rfc3339_good(void **state)
{
	(void)state;
	OK(valid_rfc3339, "2026-11-23T10:00:00Z");
	OK(valid_rfc3339, "2026-11-23T10:00:00.123Z");
	OK(valid_rfc3339, "2026-11-23T10:00:00.123456789Z");
	OK(valid_rfc3339, "2026-11-23T10:00:00+01:00");
	OK(valid_rfc3339, "2026-11-23T10:00:00-05:30");
	OK(valid_rfc3339, "2026-11-23T10:00:00.5+00:00");
	OK(valid_rfc3339, "2024-02-29T23:59:59Z");
	OK(valid_rfc3339, "1999-12-31T00:00:00Z");
}

static void
test_rfc3339_bad(void **state)
{
	(void)state;
	BAD(valid_rfc3339, "");
	BAD(valid_rfc3339, "2026-11-23");
	BAD(valid_rfc3339, "2026-11-23T10:00:00");	/* no offset */
	BAD(valid_rfc3339, "2026-13-01T00:00:00Z");	/* month 13 */
	BAD(valid_rfc3339, "2026-00-01T00:00:00Z");	/* month 0 */
	BAD(valid_rfc3339, "2026-11-00T00:00:00Z");	/* day 0 */
	BAD(valid_rfc3339, "2026-11-32T00:00:00Z");
	BAD(valid_rfc3339, "2026-11-23T24:00:00Z");
	BAD(valid_rfc3339, "2026-11-23T10:60:00Z");
	BAD(valid_rfc3339, "2026-11-23T10:00:61Z");
	BAD(valid_rfc3339, "2026-11-23T10:00:00.Z");	/* empty fraction */
	BAD(valid_rfc3339, "2026-11-23T10:00:00+1:00");
	BAD(valid_rfc3339, "2026-11-23T10:00:00+25:00");
	BAD(valid_rfc3339, "2026-11-23T10:00:00Zjunk");
	BAD(valid_rfc3339, "26-11-23T10:00:00Z");
	BAD(valid_rfc3339, "2026/11/23T10:00:00Z");
	BAD(valid_rfc3339, "tomorrow");
}

static void
test_rfc3339_respects_len(void **state)
{
	(void)state;
	/* valid_fn gets (s, len): cut before the offset, it is no time. */
	assert_non_null(valid_rfc3339("2026-11-23T10:00:00Z", 19));
	assert_non_null(valid_rfc3339("2026-11-23T10:00:00Zjunk", 20 + 4));
	assert_null(valid_rfc3339("2026-11-23T10:00:00Zjunk", 20));
}

static void
test_rfc3339_days_of_month(void **state)
{
	(void)state;
	BAD(valid_rfc3339, "2026-02-30T00:00:00Z");
	BAD(valid_rfc3339, "2023-02-29T00:00:00Z");	/* not a leap year */
	BAD(valid_rfc3339, "2026-04-31T00:00:00Z");
	OK(valid_rfc3339, "2000-02-29T00:00:00Z");	/* leap (400) */
	BAD(valid_rfc3339, "1900-02-29T00:00:00Z");	/* not (100) */
}

/* Other validators */

static void
test_email(void **state)
{
	(void)state;
	OK(valid_email, "user@example.com");
	OK(valid_email, "a.b+tag@sub.example.org");
	OK(valid_email, "first_last-1@example.co.uk");
	BAD(valid_email, "");
	BAD(valid_email, "no-at-sign");
	BAD(valid_email, "@example.com");
	BAD(valid_email, "user@");
	BAD(valid_email, "a@b@example.com");
	BAD(valid_email, "user@exa mple.com");
	BAD(valid_email, "us er@example.com");
	BAD(valid_email, "user@example.com\r\nBcc: x@y.z");
	BAD(valid_email, "user@example.com\n");
	BAD(valid_email, "a@example.com, b@example.com");
}

static void
test_email_embedded_nul(void **state)
{
	(void)state;
	/* STYLE 8: embedded NULs are rejected, wherever they are. */
	assert_non_null(valid_email("user\0@example.com", 17));
	assert_non_null(valid_email("user@exam\0ple.com", 17));
}

static void
test_https_url(void **state)
{
	(void)state;
	OK(valid_https_url, "https://example.com/a.mp3");
	OK(valid_https_url, "https://example.com:8443/path/x.wav?sig=abc");
	BAD(valid_https_url, "http://example.com/a.mp3");
	BAD(valid_https_url, "ftp://example.com/a.mp3");
	BAD(valid_https_url, "https://");
	BAD(valid_https_url, "");
	BAD(valid_https_url, "example.com/a.mp3");
	BAD(valid_https_url, "https://exa mple.com/a.mp3");
	BAD(valid_https_url, "https://example.com/a\r\n.mp3");
	BAD(valid_https_url, "javascript:alert(1)");
}

static void
test_header(void **state)
{
	(void)state;
	OK(valid_header, "Hello there");
	OK(valid_header, "Caf\xc3\xa9 news: 50% off");
	BAD(valid_header, "a\rb");
	BAD(valid_header, "a\nb");
	BAD(valid_header, "Subject\r\nBcc: victim@example.com");
	BAD(valid_header, "trailing\n");
	/* len bounds the check. */
	assert_null(valid_header("ab\r\n", 2));
}

static void
test_ident(void **state)
{
	char	id[200];

	(void)state;
	OK(valid_ident, "welcome");
	OK(valid_ident, "a.b-c_1");
	OK(valid_ident, "A");
	BAD(valid_ident, "");
	BAD(valid_ident, ".hidden");
	BAD(valid_ident, "../x");
	BAD(valid_ident, "a/b");
	BAD(valid_ident, "a b");
	BAD(valid_ident, "a\\b");
	memset(id, 'x', 128);
	id[128] = '\0';
	OK(valid_ident, id);
	memset(id, 'x', 129);
	id[129] = '\0';
	BAD(valid_ident, id);
}

/*
 * A reference: 1 to 128 characters, code points not bytes, none a
 * control character of C0, DEL or C1; the characters just past each
 * range are text.
 */
static void
test_reference(void **state)
{
	char	 s[4 * 129 + 1];
	size_t	 i;

	(void)state;
	OK(valid_reference, "r");
	OK(valid_reference, "order-1001");
	OK(valid_reference, " Ann's order #7 ");
	OK(valid_reference, "a\xc2\xa0" "b");		/* U+00A0 */
	OK(valid_reference, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	BAD(valid_reference, "");
	BAD(valid_reference, "a\nb");
	BAD(valid_reference, "a\tb");
	BAD(valid_reference, "a\rb");
	BAD(valid_reference, "\x01");
	BAD(valid_reference, "a\x1f");
	BAD(valid_reference, "a\x7f");
	BAD(valid_reference, "a\xc2\x80");		/* U+0080 */
	BAD(valid_reference, "a\xc2\x85" "b");		/* U+0085, NEL */
	BAD(valid_reference, "\xc2\x9f");		/* U+009F */
	BAD(valid_reference, "\xc2");			/* cut short */
	BAD(valid_reference, "\xc0\xaf");		/* overlong */
	BAD(valid_reference, "\xed\xa0\x80");		/* a surrogate */
	/* An embedded NUL, within len. */
	assert_non_null(valid_reference("a\0b", 3));
	/* 128 characters of 1, 2 and 4 bytes; 129 is one too many. */
	memset(s, 'x', 128);
	s[128] = '\0';
	OK(valid_reference, s);
	s[128] = 'x';
	s[129] = '\0';
	BAD(valid_reference, s);
	assert_string_equal(valid_reference(s, 129),
	    "must be at most 128 characters");
	for (i = 0; i < 128; i++)
		memcpy(s + 2 * i, "\xc3\xa9", 2);
	s[256] = '\0';
	OK(valid_reference, s);
	for (i = 0; i < 128; i++)
		memcpy(s + 4 * i, "\xf0\x9f\x98\x80", 4);
	s[512] = '\0';
	OK(valid_reference, s);
	memcpy(s + 512, "\xf0\x9f\x98\x80", 4);
	s[516] = '\0';
	BAD(valid_reference, s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_good),
		cmocka_unit_test(test_utf8_bad),
		cmocka_unit_test(test_e164),
		cmocka_unit_test(test_msisdn),
		cmocka_unit_test(test_rfc3339_good),
		cmocka_unit_test(test_rfc3339_bad),
		cmocka_unit_test(test_rfc3339_respects_len),
		cmocka_unit_test(test_rfc3339_days_of_month),
		cmocka_unit_test(test_email),
		cmocka_unit_test(test_email_embedded_nul),
		cmocka_unit_test(test_https_url),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_ident),
		cmocka_unit_test(test_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
