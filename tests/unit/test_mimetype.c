/*
 * test_mimetype.c: unit tests for lib/content/mimetype.c, content types of
 * attachments detected with libmagic.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "content/mimetype.h"

/* The shortest PDF libmagic and readers accept. */
static const char pdf[] =
    "%PDF-1.4\n"
    "1 0 obj\n<< /Type /Catalog >>\nendobj\n"
    "trailer\n<< /Root 1 0 R >>\n"
    "%%EOF\n";

/* The PNG signature and the IHDR chunk of a 1x1 8-bit RGB image. */
static const unsigned char png[] = {
	0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
	0x00, 0x00, 0x00, 0x0d, 'I', 'H', 'D', 'R',
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x02, 0x00, 0x00, 0x00,
	0x90, 0x77, 0x53, 0xde,		/* CRC-32 of "IHDR" and the fields */
};

/*
 * A zip holding a.txt ("hello\n", stored): local file header, data,
 * central directory, end of central directory.
 */
static const unsigned char zip[] = {
	/* local file header */
	'P', 'K', 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x21, 0x50, 0x20, 0x30, 0x3a, 0x36, 0x06, 0x00,
	0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
	'a', '.', 't', 'x', 't',
	'h', 'e', 'l', 'l', 'o', '\n',
	/* central directory file header */
	'P', 'K', 0x01, 0x02, 0x14, 0x03, 0x14, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x21, 0x50, 0x20, 0x30, 0x3a, 0x36,
	0x06, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x05, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x80, 0x01, 0x00, 0x00, 0x00, 0x00,
	'a', '.', 't', 'x', 't',
	/* end of central directory */
	'P', 'K', 0x05, 0x06, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
	0x01, 0x00, 0x33, 0x00, 0x00, 0x00, 0x29, 0x00, 0x00, 0x00,
	0x00, 0x00,
};

static int
setup(void **state)
{
	struct mimetype	*m;
	char		 err[256] = "";

	if ((m = mimetype_new(err, sizeof(err))) == NULL) {
		fprintf(stderr, "mimetype_new: %s\n", err);
		return -1;
	}
	*state = m;
	return 0;
}

static int
teardown(void **state)
{
	mimetype_free(*state);
	*state = NULL;
	return 0;
}

/* Detect p; the test fails unless the type is exactly want. */
static void
type_is(struct mimetype *m, const void *p, size_t len, const char *want)
{
	char	out[128];

	memset(out, 'X', sizeof(out));
	mimetype_detect(m, p, len, out, sizeof(out));
	assert_non_null(memchr(out, '\0', sizeof(out)));
	if (strcmp(out, want) != 0)
		fail_msg("%zu bytes detected as \"%s\", expected \"%s\"",
		    len, out, want);
}

static void
test_new_free(void **state)
{
	struct mimetype	*m;
	char		 err[256] = "";

	(void)state;
	m = mimetype_new(err, sizeof(err));
	if (m == NULL)
		fail_msg("mimetype_new: %s", err);
	assert_string_equal(err, "");
	mimetype_free(m);
}

static void
test_free_null(void **state)
{
	(void)state;
	mimetype_free(NULL);
	assert_true(1);	/* reached */
}

/* Two handles at once are independent. */
static void
test_two_handles(void **state)
{
	struct mimetype	*a, *b;
	char		 err[256];

	(void)state;
	a = mimetype_new(err, sizeof(err));
	assert_non_null(a);
	b = mimetype_new(err, sizeof(err));
	assert_non_null(b);
	type_is(a, pdf, sizeof(pdf) - 1, "application/pdf");
	mimetype_free(a);
	type_is(b, png, sizeof(png), "image/png");
	mimetype_free(b);
}

static void
test_pdf(void **state)
{
	static const char tiny[] = "%PDF-1.4\n%%EOF\n";

	type_is(*state, pdf, sizeof(pdf) - 1, "application/pdf");
	type_is(*state, tiny, sizeof(tiny) - 1, "application/pdf");
}

static void
test_png(void **state)
{
	type_is(*state, png, sizeof(png), "image/png");
}

static void
test_text(void **state)
{
	static const char ascii[] =
	    "Hello, this is plain ASCII text.\nSecond line.\n";
	static const char utf8[] = "Caf\xc3\xa9 au lait, 5 \xe2\x82\xac.\n";

	type_is(*state, ascii, sizeof(ascii) - 1, "text/plain");
	type_is(*state, utf8, sizeof(utf8) - 1, "text/plain");
}

static void
test_zip(void **state)
{
	type_is(*state, zip, sizeof(zip), "application/zip");
}

static void
test_empty(void **state)
{
	type_is(*state, "", 0, "application/octet-stream");
	/* len decides, not the bytes behind p. */
	type_is(*state, pdf, 0, "application/octet-stream");
}

static void
test_unknown_binary(void **state)
{
	static const unsigned char junk[] = {
		0x00, 0x01, 0x02, 0x03, 0xfe, 0xff, 0x00, 0x9c,
		0x11, 0x80, 0x00, 0x00, 0x7f, 0x01, 0xee, 0x00,
	};

	type_is(*state, junk, sizeof(junk), "application/octet-stream");
}

/*
 * Only len bytes are looked at: text followed by a PDF is text when cut
 * before it, and the PNG signature without its IHDR chunk is not enough.
 */
static void
test_length_respected(void **state)
{
	static const char s[] = "plain words\n%PDF-1.4\n%%EOF\n";

	type_is(*state, s, 12, "text/plain");
	type_is(*state, png, 8, "application/octet-stream");
}

/* A short out is truncated and still terminated. */
static void
test_short_out(void **state)
{
	char	out[8];

	memset(out, 'X', sizeof(out));
	mimetype_detect(*state, pdf, sizeof(pdf) - 1, out, sizeof(out));
	assert_string_equal(out, "applica");
	memset(out, 'X', sizeof(out));
	mimetype_detect(*state, "", 0, out, sizeof(out));
	assert_string_equal(out, "applica");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_free),
		cmocka_unit_test(test_free_null),
		cmocka_unit_test(test_two_handles),
		cmocka_unit_test_setup_teardown(test_pdf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_png, setup, teardown),
		cmocka_unit_test_setup_teardown(test_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_binary, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_length_respected, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_short_out, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
