/*
 * test_mime.c: unit tests for lib/base/mime.c: base64 (RFC 4648), file name
 * checks and the addresses an email may carry.  HTML is test_html.c's;
 * the message itself is test_message.c's.
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
#include "base/mime.h"

/* RFC 4648 section 10. */
static const struct {
	const char	*plain;
	const char	*padded;
	const char	*unpadded;
} vectors[] = {
	{ "", "", "" },
	{ "f", "Zg==", "Zg" },
	{ "fo", "Zm8=", "Zm8" },
	{ "foo", "Zm9v", "Zm9v" },
	{ "foob", "Zm9vYg==", "Zm9vYg" },
	{ "fooba", "Zm9vYmE=", "Zm9vYmE" },
	{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
};
#define NVECTORS	(sizeof(vectors) / sizeof(vectors[0]))

/*
 * Decode the C string s with limit max; the test fails unless it
 * returns 0 with exactly want (wantlen bytes).
 */
static void
decode_ok(const char *s, size_t max, const void *want, size_t wantlen)
{
	unsigned char	*out = NULL;
	size_t		 outlen = 12345;
	int		 rc;

	rc = mime_base64_decode(s, strlen(s), max, &out, &outlen);
	if (rc != 0)
		fail_msg("\"%s\" (max %zu): returned %d, expected 0", s,
		    max, rc);
	assert_non_null(out);
	if (outlen != wantlen || memcmp(out, want, wantlen) != 0) {
		free(out);
		fail_msg("\"%s\": decoded %zu bytes, not the %zu expected",
		    s, outlen, wantlen);
	}
	free(out);
}

/* Decode s (len bytes); the test fails unless it returns want. */
static void
decode_err_len(const char *s, size_t len, size_t max, int want)
{
	unsigned char	*out = (unsigned char *)"sentinel";
	size_t		 outlen = 12345;
	int		 rc;

	rc = mime_base64_decode(s, len, max, &out, &outlen);
	if (rc == 0)
		free(out);
	if (rc != want)
		fail_msg("\"%.*s\" (max %zu): returned %d, expected %d",
		    len > 64 ? 64 : (int)len, s, max, rc, want);
	if (rc == 0)
		return;
	/* On error nothing is handed over. */
	assert_null(out);
	assert_int_equal(outlen, 0);
}

static void
decode_err(const char *s, size_t max, int want)
{
	decode_err_len(s, strlen(s), max, want);
}

static void
test_b64_decode_vectors(void **state)
{
	size_t	i;

	(void)state;
	for (i = 0; i < NVECTORS; i++) {
		decode_ok(vectors[i].padded, 0, vectors[i].plain,
		    strlen(vectors[i].plain));
		decode_ok(vectors[i].unpadded, 0, vectors[i].plain,
		    strlen(vectors[i].plain));
	}
}

static void
test_b64_decode_empty(void **state)
{
	unsigned char	*out = NULL;
	size_t		 outlen = 12345;

	(void)state;
	assert_int_equal(mime_base64_decode("", 0, 0, &out, &outlen), 0);
	assert_non_null(out);
	assert_int_equal(outlen, 0);
	free(out);
	/* Only blank space: still empty, still fine. */
	decode_ok(" \r\n\t\n", 0, "", 0);
}

static void
test_b64_decode_whitespace(void **state)
{
	(void)state;
	decode_ok("Zm9v\nYmFy", 0, "foobar", 6);
	decode_ok("Zm9v\r\nYmFy\r\n", 0, "foobar", 6);
	decode_ok("Zm9vYg==\r\n", 0, "foob", 4);
	decode_ok("Zm9vYg==\n", 0, "foob", 4);
	decode_ok("Zm 9v Ym Fy", 0, "foobar", 6);
	decode_ok("  Zm9vYmE=  ", 0, "fooba", 5);
	decode_ok("Z\nm\r\n9\tv", 0, "foo", 3);
	/* Unpadded and broken across lines. */
	decode_ok("Zm9v\r\nYg\r\n", 0, "foob", 4);
	decode_ok("Zm9v\nY\nm\nE\n", 0, "fooba", 5);
	/* Line breaks between the padding characters. */
	decode_ok("Zg=\r\n=", 0, "f", 1);
}

static void
test_b64_decode_invalid_chars(void **state)
{
	(void)state;
	decode_err("Zm9v!", 0, -1);
	decode_err("!Zm9v", 0, -1);
	decode_err("Zm!v", 0, -1);
	/* base64url's two letters are not base64. */
	decode_err("Zm-v", 0, -1);
	decode_err("Zm_v", 0, -1);
	decode_err("-_-_", 0, -1);
	decode_err("Zm9v.", 0, -1);
	decode_err("Zm9v\x80", 0, -1);
	decode_err("Zm9v\xc3\xa9", 0, -1);
	/* An embedded NUL is not blank space. */
	decode_err_len("Zm\0v", 4, 0, -1);
	decode_err_len("Zm9v\0", 5, 0, -1);
}

static void
test_b64_decode_lone_char(void **state)
{
	(void)state;
	/* Length 4n+1: one character cannot hold a byte. */
	decode_err("Z", 0, -1);
	decode_err("A", 0, -1);
	decode_err("Zm9vY", 0, -1);
	decode_err("Zm9vYmFyZ", 0, -1);
	decode_err("Zm9v\r\nY\r\n", 0, -1);
	decode_err("Zm9vY=", 0, -1);
	decode_err("Zm9vY==", 0, -1);
}

/* A lone character made up to a quantum with three padding characters. */
static void
test_b64_decode_lone_char_padded(void **state)
{
	(void)state;
	decode_err("A===", 0, -1);
	decode_err("Zm9vA===", 0, -1);
}

static void
test_b64_decode_bad_padding(void **state)
{
	(void)state;
	/* Data after the padding. */
	decode_err("Zg==Zg", 0, -1);
	decode_err("Zg==Zg==", 0, -1);
	decode_err("Zm8=Zm8=", 0, -1);
	/* Padding where none belongs, or too much or too little. */
	decode_err("=", 0, -1);
	decode_err("==", 0, -1);
	decode_err("====", 0, -1);
	decode_err("Zm9v=", 0, -1);
	decode_err("Zm9v====", 0, -1);
	decode_err("Zg=", 0, -1);
	decode_err("Zg===", 0, -1);
	decode_err("Zm8==", 0, -1);
	/* Padding in the middle of a quantum. */
	decode_err("Z=g=", 0, -1);
}

/* All 256 byte values through encode and back. */
static void
test_b64_roundtrip_binary(void **state)
{
	unsigned char	 all[256], *out;
	char		*enc;
	size_t		 i, n, outlen;

	(void)state;
	for (i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)i;
	/* Every length up to 256, so every tail length is covered. */
	for (n = 0; n <= sizeof(all); n++) {
		enc = mime_base64_encode(all, n);
		assert_non_null(enc);
		assert_int_equal(strlen(enc), (n + 2) / 3 * 4);
		assert_int_equal(mime_base64_decode(enc, strlen(enc), 0,
		    &out, &outlen), 0);
		assert_int_equal(outlen, n);
		if (n > 0)
			assert_memory_equal(out, all, n);
		free(out);
		free(enc);
	}
	/* The well-known start of the 0..255 sequence. */
	enc = mime_base64_encode(all, sizeof(all));
	assert_non_null(enc);
	assert_int_equal(strncmp(enc, "AAECAwQFBgcICQoLDA0ODxAR", 24), 0);
	assert_string_equal(enc + strlen(enc) - 8, "/P3+/w==");
	free(enc);
}

static void
test_b64_decode_max(void **state)
{
	(void)state;
	/* Exactly max bytes is fine. */
	decode_ok("Zm9vYmFy", 6, "foobar", 6);
	decode_ok("Zm9vYmE=", 5, "fooba", 5);
	decode_ok("Zm9vYmE", 5, "fooba", 5);
	decode_ok("Zg==", 1, "f", 1);
	decode_ok("Zg", 1, "f", 1);
	/* Under the limit. */
	decode_ok("Zm9v", 100, "foo", 3);
	/* One over. */
	decode_err("Zm9vYmFy", 5, -2);
	decode_err("Zm9vYmE=", 4, -2);
	decode_err("Zm9vYmE", 4, -2);
	decode_err("Zm9vYg==", 3, -2);
	decode_err("Zm9vYg", 3, -2);
	decode_err("Zm8=", 1, -2);
	decode_err("Zm8", 1, -2);
}

/* A base64 string decoding to n bytes of 'A', broken into 76-char lines. */
static char *
big_base64(size_t n, size_t *len)
{
	unsigned char	*raw;
	char		*enc, *s;
	size_t		 i, j, elen;

	raw = malloc(n);
	assert_non_null(raw);
	memset(raw, 'A', n);
	enc = mime_base64_encode(raw, n);
	assert_non_null(enc);
	free(raw);
	elen = strlen(enc);
	s = malloc(elen + elen / 76 * 2 + 3);
	assert_non_null(s);
	for (i = j = 0; i < elen; i++) {
		s[j++] = enc[i];
		if (i % 76 == 75) {
			s[j++] = '\r';
			s[j++] = '\n';
		}
	}
	s[j] = '\0';
	free(enc);
	*len = j;
	return s;
}

static void
test_b64_decode_max_large(void **state)
{
	unsigned char	*out = NULL;
	char		*s;
	size_t		 len, outlen, i;

	(void)state;
	/* 1 MiB of output, limited to 1000 bytes. */
	s = big_base64(1024 * 1024, &len);
	decode_err_len(s, len, 1000, -2);
	/* Limit just under, at, and without. */
	decode_err_len(s, len, 1024 * 1024 - 1, -2);
	assert_int_equal(mime_base64_decode(s, len, 1024 * 1024, &out,
	    &outlen), 0);
	assert_int_equal(outlen, 1024 * 1024);
	for (i = 0; i < outlen; i++)
		if (out[i] != 'A')
			fail_msg("byte %zu is 0x%02x", i, out[i]);
	free(out);
	assert_int_equal(mime_base64_decode(s, len, 0, &out, &outlen), 0);
	assert_int_equal(outlen, 1024 * 1024);
	free(out);
	free(s);

	/* 1 MiB of input characters (no line breaks), max 1000. */
	s = malloc(1024 * 1024 + 1);
	assert_non_null(s);
	memset(s, 'Q', 1024 * 1024);
	s[1024 * 1024] = '\0';
	decode_err_len(s, 1024 * 1024, 1000, -2);
	free(s);
}

static void
test_b64_encode_vectors(void **state)
{
	char	*enc;
	size_t	 i;

	(void)state;
	for (i = 0; i < NVECTORS; i++) {
		enc = mime_base64_encode((const unsigned char *)
		    vectors[i].plain, strlen(vectors[i].plain));
		assert_non_null(enc);
		assert_string_equal(enc, vectors[i].padded);
		free(enc);
	}
}

static void
test_b64_encode_empty(void **state)
{
	char	*enc;

	(void)state;
	enc = mime_base64_encode((const unsigned char *)"", 0);
	assert_non_null(enc);
	assert_string_equal(enc, "");
	free(enc);
}

static void
test_b64_encode_one_line(void **state)
{
	unsigned char	 raw[300];
	char		*enc;

	(void)state;
	memset(raw, 0xff, sizeof(raw));
	enc = mime_base64_encode(raw, sizeof(raw));
	assert_non_null(enc);
	/* One line, no breaks, the base64 alphabet (not base64url). */
	assert_int_equal(strlen(enc), 400);
	assert_null(strchr(enc, '\n'));
	assert_null(strchr(enc, '\r'));
	assert_int_equal(strspn(enc, "/"), 400);
	free(enc);
	raw[0] = 0xfb;
	raw[1] = 0xef;
	enc = mime_base64_encode(raw, 2);
	assert_string_equal(enc, "++8=");
	free(enc);
}

#define NAME_OK(s)	name_ok(s, strlen(s))
#define NAME_BAD(s)	name_bad(s, strlen(s))

static void
name_ok(const char *s, size_t len)
{
	const char	*m;

	m = mime_filename_check(s, len);
	if (m != NULL)
		fail_msg("\"%.*s\" rejected: %s", (int)len, s, m);
}

static void
name_bad(const char *s, size_t len)
{
	const char	*m;

	m = mime_filename_check(s, len);
	if (m == NULL)
		fail_msg("\"%.*s\" (%zu bytes) accepted", (int)len, s, len);
	assert_true(m[0] != '\0');
}

static void
test_filename_ok(void **state)
{
	char	name[256];

	(void)state;
	NAME_OK("report.pdf");
	NAME_OK("a b.txt");
	NAME_OK("r\xc3\xa9sum\xc3\xa9.pdf");
	NAME_OK("\xe6\x97\xa5\xe6\x9c\xac.txt");
	NAME_OK("...");
	NAME_OK(".hidden");
	NAME_OK("a..b");
	NAME_OK("x");
	/* 255 bytes is the most allowed. */
	memset(name, 'n', 255);
	name_ok(name, 255);
	/* Only len bytes count. */
	name_ok("ok.txt/../../etc", 6);
}

static void
test_filename_bad(void **state)
{
	char	name[256];

	(void)state;
	NAME_BAD("");
	name_bad("whatever", 0);
	NAME_BAD(".");
	NAME_BAD("..");
	NAME_BAD("a/b");
	NAME_BAD("/etc/passwd");
	NAME_BAD("../x");
	NAME_BAD("..\\x");
	NAME_BAD("a\\b");
	NAME_BAD("a\rb");
	NAME_BAD("a\nb");
	NAME_BAD("name.txt\n");
	name_bad("a\0b.txt", 7);
	name_bad("a.txt\0", 6);
	memset(name, 'n', 256);
	name_bad(name, 256);
}

#define ADDR_OK(s, wname, waddr)	addr_ok(s, wname, waddr)

static void
addr_ok(const char *s, const char *wname, const char *waddr)
{
	struct mime_address	 a;
	const char		*why;

	if ((why = mime_address_parse(s, strlen(s), &a)) != NULL)
		fail_msg("\"%s\" refused: %s", s, why);
	if (wname == NULL ? a.name != NULL : a.name == NULL ||
	    a.namelen != strlen(wname) || memcmp(a.name, wname, a.namelen))
		fail_msg("\"%s\": display name \"%.*s\", not \"%s\"", s,
		    a.name ? (int)a.namelen : 6, a.name ? a.name : "(none)",
		    wname ? wname : "(none)");
	if (a.addrlen != strlen(waddr) || memcmp(a.addr, waddr, a.addrlen))
		fail_msg("\"%s\": address \"%.*s\", not \"%s\"", s,
		    (int)a.addrlen, a.addr, waddr);
}

static void
addr_bad(const char *s, const char *want)
{
	struct mime_address	 a;
	const char		*why;

	if ((why = mime_address_parse(s, strlen(s), &a)) == NULL)
		fail_msg("\"%s\" accepted", s);
	if (want != NULL && strstr(why, want) == NULL)
		fail_msg("\"%s\": \"%s\" does not say \"%s\"", s, why, want);
}

static void
test_address_parse(void **state)
{
	(void)state;
	ADDR_OK("a@example.com", NULL, "a@example.com");
	ADDR_OK("<a@example.com>", NULL, "a@example.com");
	ADDR_OK("Ann <a@example.com>", "Ann", "a@example.com");
	ADDR_OK("Ann Q. Doe <a@example.com>", "Ann Q. Doe", "a@example.com");
	ADDR_OK("Ann<a@example.com>", "Ann", "a@example.com");
	ADDR_OK("\"Doe, Ann\" <a@example.com>", "\"Doe, Ann\"",
	    "a@example.com");
	ADDR_OK("\"say \\\"hi\\\"\" <a@example.com>", "\"say \\\"hi\\\"\"",
	    "a@example.com");
	ADDR_OK("Zo\xc3\xab <zoe@example.com>", "Zo\xc3\xab",
	    "zoe@example.com");
	ADDR_OK("O'Brien+x <a@example.com>", "O'Brien+x", "a@example.com");
	/* Defect 11 of issue 9: none of these is one address. */
	addr_bad("x> y <a@b.example>", "quotes");
	addr_bad("Ann, Bob <a@example.com>", "quotes");
	addr_bad("Ann (x) <a@example.com>", "quotes");
	addr_bad("a@b.example <c@d.example>", "quotes");
	addr_bad("Ann \"Q\" <a@example.com>", "quotes");
	addr_bad("Ann <a@example.com", NULL);
	addr_bad("Ann a@example.com>", NULL);
	addr_bad("Ann <a@example.com> ", NULL);
	addr_bad("Ann <a@example.com>x", NULL);
	addr_bad("Ann <<a@example.com>>", NULL);
	addr_bad("Ann <a@example.com> <b@example.com>", NULL);
	addr_bad("\"Ann <a@example.com>", "quotes");
	addr_bad("Ann <>", NULL);
	addr_bad("a@b.example, c@d.example", NULL);
	addr_bad("not an address", NULL);
	addr_bad("", NULL);
	addr_bad("Ann\t<a@example.com>", "control");
	addr_bad("Ann <a@example.com>\r\nBcc: x@example.com", "control");
	/* Not ASCII: SMTPUTF8 would be needed end to end. */
	addr_bad("j\xc3\xb6rg@example.de", "ASCII");
	addr_bad("J\xc3\xb6rg <j\xc3\xb6rg@example.de>", "ASCII");
	addr_bad("a@b\xc3\xbc.example", "ASCII");
	assert_null(mime_addr_spec_check("a@example.com", 13));
	assert_non_null(mime_addr_spec_check("Ann <a@example.com>", 19));
	assert_non_null(mime_addr_spec_check("\xc3\xa4@example.com", 14));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b64_decode_vectors),
		cmocka_unit_test(test_b64_decode_empty),
		cmocka_unit_test(test_b64_decode_whitespace),
		cmocka_unit_test(test_b64_decode_invalid_chars),
		cmocka_unit_test(test_b64_decode_lone_char),
		cmocka_unit_test(test_b64_decode_lone_char_padded),
		cmocka_unit_test(test_b64_decode_bad_padding),
		cmocka_unit_test(test_b64_roundtrip_binary),
		cmocka_unit_test(test_b64_decode_max),
		cmocka_unit_test(test_b64_decode_max_large),
		cmocka_unit_test(test_b64_encode_vectors),
		cmocka_unit_test(test_b64_encode_empty),
		cmocka_unit_test(test_b64_encode_one_line),
		cmocka_unit_test(test_filename_ok),
		cmocka_unit_test(test_filename_bad),
		cmocka_unit_test(test_address_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
