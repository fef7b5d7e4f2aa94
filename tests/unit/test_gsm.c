/*
 * test_gsm.c: the SMS text encoder of the smpp provider (spooler/smpp/gsm.c):
 * which texts fit GSM 03.38, the septets and UTF-16 units they become,
 * and where a long text is split (UDH, escapes and surrogate pairs kept
 * whole); and a received text read back by its data_coding.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smpp/gsm.h"

static void
encode(const char *text, struct gsm_sms *sms)
{
	char	err[128];

	assert_int_equal(gsm_encode(text, strlen(text), 0x2a, sms, err,
	    sizeof(err)), 0);
}

static void
test_fits(void **state)
{
	size_t	n;

	(void)state;
	assert_int_equal(gsm_fits("Hello @ world", 13, &n), 1);
	assert_int_equal(n, 13);
	/* The extension table: two septets each. */
	assert_int_equal(gsm_fits("{}[]~\\|^\xe2\x82\xac", 11, &n), 1);
	assert_int_equal(n, 18);
	/* Greek capitals and Latin-1 letters of the default alphabet. */
	assert_int_equal(gsm_fits("\xce\x94\xce\xa9 \xc3\xa9\xc3\xbc\xc3\x9f",
	    11, &n), 1);
	assert_int_equal(n, 6);
	/* Not in it: a lowercase e with circumflex, Cyrillic, an emoji. */
	assert_int_equal(gsm_fits("\xc3\xaa", 2, &n), 0);
	assert_int_equal(gsm_fits("\xd0\x96", 2, NULL), 0);
	assert_int_equal(gsm_fits("ok \xf0\x9f\x98\x80", 7, NULL), 0);
	/* Not UTF-8: overlong, a lone continuation, a surrogate, cut. */
	assert_int_equal(gsm_fits("\xc0\xaf", 2, NULL), -1);
	assert_int_equal(gsm_fits("\x80", 1, NULL), -1);
	assert_int_equal(gsm_fits("\xed\xa0\x80", 3, NULL), -1);
	assert_int_equal(gsm_fits("\xe2\x82", 2, NULL), -1);
}

static void
test_gsm_single(void **state)
{
	struct gsm_sms	sms;
	static const uint8_t want[] = { 'A', 0x00, 0x01, 0x04, 0x1b, 0x65,
	    0x1b, 0x28, 0x5f, 0x7f, 0x10 };

	(void)state;
	/* A @ pound e-grave euro { section a-grave Delta */
	encode("A@\xc2\xa3\xc3\xa8\xe2\x82\xac{\xc2\xa7\xc3\xa0\xce\x94", &sms);
	assert_int_equal(sms.coding, GSM_CODING_DEFAULT);
	assert_int_equal(sms.nparts, 1);
	assert_false(sms.udhi);
	assert_int_equal(sms.units, sizeof(want));
	assert_int_equal(sms.parts[0].len, sizeof(want));
	assert_memory_equal(sms.parts[0].octets, want, sizeof(want));
	gsm_free(&sms);
}

static void
test_gsm_160_is_one(void **state)
{
	struct gsm_sms	sms;
	char		text[200];

	(void)state;
	memset(text, 'x', 160);
	text[160] = '\0';
	encode(text, &sms);
	assert_int_equal(sms.nparts, 1);
	assert_int_equal(sms.parts[0].len, 160);
	gsm_free(&sms);
	text[160] = 'y';
	text[161] = '\0';
	encode(text, &sms);
	assert_int_equal(sms.nparts, 2);
	assert_true(sms.udhi);
	assert_int_equal(sms.parts[0].len, GSM_UDH_LEN + 153);
	assert_int_equal(sms.parts[1].len, GSM_UDH_LEN + 8);
	assert_int_equal(sms.parts[1].octets[GSM_UDH_LEN + 7], 'y');
	gsm_free(&sms);
}

static void
test_gsm_three_parts(void **state)
{
	struct gsm_sms	sms;
	char		text[400];
	size_t		i;

	(void)state;
	for (i = 0; i < 153 * 2 + 10; i++)
		text[i] = (char)('a' + i % 26);
	text[i] = '\0';
	encode(text, &sms);
	assert_int_equal(sms.nparts, 3);
	for (i = 0; i < 3; i++) {
		const uint8_t udh[] = { 5, 0, 3, 0x2a, 3, (uint8_t)(i + 1) };

		assert_memory_equal(sms.parts[i].octets, udh, sizeof(udh));
	}
	assert_int_equal(sms.parts[2].len, GSM_UDH_LEN + 10);
	/* The parts, put together, are the text. */
	assert_memory_equal(sms.parts[1].octets + GSM_UDH_LEN, text + 153,
	    153);
	gsm_free(&sms);
}

/* An escaped character never straddles two parts. */
static void
test_gsm_escape_kept_whole(void **state)
{
	struct gsm_sms	sms;
	char		text[400];

	(void)state;
	memset(text, 'a', 152);
	strcpy(text + 152, "{bcd");
	memset(text + 156, 'e', 20);
	text[176] = '\0';
	encode(text, &sms);
	assert_int_equal(sms.nparts, 2);
	assert_int_equal(sms.parts[0].len, GSM_UDH_LEN + 152);
	assert_int_equal(sms.parts[1].octets[GSM_UDH_LEN], 0x1b);
	assert_int_equal(sms.parts[1].octets[GSM_UDH_LEN + 1], 0x28);
	assert_int_equal(sms.units, 177);
	gsm_free(&sms);
}

static void
test_ucs2(void **state)
{
	struct gsm_sms	sms;
	static const uint8_t want[] = { 0x04, 0x1f, 0x04, 0x40, 0x00, 0x21,
	    0xd8, 0x3d, 0xde, 0x00 };

	(void)state;
	/* Cyrillic Pe, er, "!", and U+1F600 as a surrogate pair. */
	encode("\xd0\x9f\xd1\x80!\xf0\x9f\x98\x80", &sms);
	assert_int_equal(sms.coding, GSM_CODING_UCS2);
	assert_int_equal(sms.nparts, 1);
	assert_int_equal(sms.units, 5);
	assert_int_equal(sms.parts[0].len, sizeof(want));
	assert_memory_equal(sms.parts[0].octets, want, sizeof(want));
	gsm_free(&sms);
}

static void
test_ucs2_split(void **state)
{
	struct gsm_sms	sms;
	char		text[1024];
	size_t		i, o = 0;

	(void)state;
	/* 70 units is one SMS, 71 two. */
	for (i = 0; i < 70; i++, o += 2)
		memcpy(text + o, "\xd0\x96", 2);
	text[o] = '\0';
	encode(text, &sms);
	assert_int_equal(sms.nparts, 1);
	assert_int_equal(sms.parts[0].len, 140);
	gsm_free(&sms);
	memcpy(text + o, "\xd0\x96", 3);
	encode(text, &sms);
	assert_int_equal(sms.nparts, 2);
	assert_int_equal(sms.parts[0].len, GSM_UDH_LEN + 134);
	assert_int_equal(sms.parts[1].len, GSM_UDH_LEN + 8);
	gsm_free(&sms);
	/* A surrogate pair at the 67th unit goes whole to the next part. */
	o = 0;
	for (i = 0; i < 66; i++, o += 2)
		memcpy(text + o, "\xd0\x96", 2);
	memcpy(text + o, "\xf0\x9f\x98\x80xyz", 8);
	encode(text, &sms);
	assert_int_equal(sms.nparts, 2);
	assert_int_equal(sms.parts[0].len, GSM_UDH_LEN + 132);
	assert_int_equal(sms.parts[1].octets[GSM_UDH_LEN], 0xd8);
	assert_int_equal(sms.parts[1].len, GSM_UDH_LEN + 10);
	gsm_free(&sms);
}

/* The longest text the API takes (1600 characters) fits 255 parts. */
static void
test_limits(void **state)
{
	struct gsm_sms	sms;
	static char	text[1600 * 4 + 1];
	char		err[128];
	size_t		i;

	(void)state;
	for (i = 0; i < 1600; i++)
		memcpy(text + 4 * i, "\xf0\x9f\x98\x80", 4);
	encode(text, &sms);
	assert_int_equal(sms.units, 3200);
	/* 33 pairs of units in each part of 67. */
	assert_int_equal(sms.nparts, (1600 + 32) / 33);
	gsm_free(&sms);
	assert_int_equal(gsm_encode("", 0, 1, &sms, err, sizeof(err)), -1);
	assert_int_equal(gsm_encode("\xff", 1, 1, &sms, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "UTF-8"));
	assert_null(sms.parts);
	gsm_free(&sms);
	gsm_free(NULL);
}

static void
decoded(uint8_t coding, const char *octets, size_t len, const char *want)
{
	char	*text;

	assert_int_equal(gsm_decode(coding, (const uint8_t *)octets, len,
	    &text), 0);
	assert_string_equal(text, want);
	free(text);
}

/* What a phone sent, read back: each coding, and what cannot be read. */
static void
test_decode(void **state)
{
	struct gsm_sms	 sms;
	char		*text;
	size_t		 i;
	/* Every character of the alphabet and of its extension table. */
	static const char all[] = "@\xc2\xa3$\xc2\xa5\xc3\xa8\xc3\xa9 ok "
	    "\xce\x94\xce\xa9 \xc3\x84\xc3\xb6\xc3\x9f {}[]~\\|^\xe2\x82\xac";

	(void)state;
	encode(all, &sms);
	assert_int_equal(sms.coding, GSM_CODING_DEFAULT);
	decoded(0x00, (const char *)sms.parts[0].octets, sms.parts[0].len,
	    all);
	decoded(0xf1, (const char *)sms.parts[0].octets, sms.parts[0].len,
	    all);
	gsm_free(&sms);
	/* UCS-2, a character beyond the BMP in a surrogate pair. */
	encode("\xd0\x9f\xd1\x80\xd0\xb8 \xf0\x9f\x98\x80", &sms);
	assert_int_equal(sms.coding, GSM_CODING_UCS2);
	decoded(0x08, (const char *)sms.parts[0].octets, sms.parts[0].len,
	    "\xd0\x9f\xd1\x80\xd0\xb8 \xf0\x9f\x98\x80");
	gsm_free(&sms);
	decoded(0x03, "Gr\xfc\xdf""e", 5, "Gr\xc3\xbc\xc3\x9f""e");
	decoded(0x01, "plain", 5, "plain");
	decoded(0x00, "", 0, "");
	/* Unreadable: an octet no septet, half a pair, an odd octet, an
	 * ASCII byte above 0x7f: U+FFFD.  An escape to no character of
	 * the table: the basic table's; a second escape, a space. */
	decoded(0x00, "a\x80", 2, "a\xef\xbf\xbd");
	decoded(0x08, "\xd8\x3d\x00\x41", 4, "\xef\xbf\xbd""A");
	decoded(0x08, "\x00\x41\x00", 3, "A\xef\xbf\xbd");
	decoded(0x01, "\xff", 1, "\xef\xbf\xbd");
	decoded(0x00, "\x1b\x41", 2, "A");
	decoded(0x00, "\x1b\x1b", 2, " ");
	decoded(0x00, "x\x1b", 2, "x ");
	/* Binary and national alphabets are no text. */
	for (i = 0; i < 3; i++) {
		static const uint8_t codings[] = { 0x04, 0x02, 0xf4 };

		assert_int_equal(gsm_decode(codings[i], (const uint8_t *)"ab",
		    2, &text), 1);
		assert_null(text);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits),
		cmocka_unit_test(test_gsm_single),
		cmocka_unit_test(test_gsm_160_is_one),
		cmocka_unit_test(test_gsm_three_parts),
		cmocka_unit_test(test_gsm_escape_kept_whole),
		cmocka_unit_test(test_ucs2),
		cmocka_unit_test(test_ucs2_split),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
