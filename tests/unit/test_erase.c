/*
 * test_erase.c: an address to erase (lib/spool/erase.c; msgspool-spool(5),
 * Erasure): read in each of its forms, and found in text only where it
 * is itself, not inside another number or address.  What a run removes
 * is test_erase_files.c's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/msgspool.h"
#include "spool/erase.h"
#include "spool/spool.h"
#include "testutil.h"

#define X_PHONE	"+4915112345678"

static void
test_addr_parse(void **state)
{
	struct erase_addr	a;

	(void)state;
	assert_int_equal(erase_addr_parse(X_PHONE, &a), 0);
	assert_false(a.email);
	assert_string_equal(a.key, X_PHONE);
	assert_string_equal(a.text, "4915112345678");
	/* OTT's form: the digits alone. */
	assert_int_equal(erase_addr_parse("4915112345678", &a), 0);
	assert_string_equal(a.key, X_PHONE);
	assert_int_equal(erase_addr_parse("Ann@Example.COM", &a), 0);
	assert_true(a.email);
	assert_string_equal(a.key, "Ann@example.com");
	assert_string_equal(a.text, "ann@example.com");
	assert_int_equal(erase_addr_parse("+49151", &a), -1);
	assert_int_equal(erase_addr_parse("+4915112345678901", &a), -1);
	assert_int_equal(erase_addr_parse("004915112345678", &a), -1);
	assert_int_equal(erase_addr_parse("+49 151 12345678", &a), -1);
	assert_int_equal(erase_addr_parse("ann@", &a), -1);
	assert_int_equal(erase_addr_parse("", &a), -1);
	assert_int_equal(erase_addr_parse("acme", &a), -1);
	assert_int_equal(erase_addr_parse(NULL, &a), -1);
}

static int
names(const struct erase_addr *a, const char *text)
{
	return erase_names(a, text, strlen(text));
}

/* A number's digits with no other digit beside them, "00" allowed. */
static void
test_names_number(void **state)
{
	struct erase_addr	a;

	(void)state;
	assert_int_equal(erase_addr_parse(X_PHONE, &a), 0);
	assert_true(names(&a, "{\"to\": \"+4915112345678\"}"));
	assert_true(names(&a, "{\"to\":\"4915112345678\"}"));
	assert_true(names(&a, "4915112345678"));
	assert_true(names(&a, "call 004915112345678 now"));
	assert_true(names(&a, "01M8\t+4915112345678\tx"));
	assert_false(names(&a, "+14915112345678"));
	assert_false(names(&a, "+49151123456789"));
	assert_false(names(&a, "+4915112345679"));
	assert_false(names(&a, "104915112345678"));
	assert_false(names(&a, "491511234567"));
	assert_false(names(&a, ""));
}

/* An email address in any case, not inside a longer one. */
static void
test_names_email(void **state)
{
	struct erase_addr	a;

	(void)state;
	assert_int_equal(erase_addr_parse("ann@example.com", &a), 0);
	assert_true(names(&a, "{\"to\": \"ann@example.com\"}"));
	assert_true(names(&a, "To: Ann <ANN@Example.Com>\r\n"));
	assert_true(names(&a, "mailto:ann@example.com?subject=x"));
	assert_true(names(&a, "write to ann@example.com."));
	assert_false(names(&a, "joann@example.com"));
	assert_false(names(&a, "j.ann@example.com"));
	assert_false(names(&a, "ann@example.com.au"));
	assert_false(names(&a, "ann@example.community"));
	assert_false(names(&a, "ann@example.co"));
}

/* Nothing to erase: nothing counted; a spool without new/: -1. */
static void
test_run_nothing(void **state)
{
	struct tu_spool		*f = *state;
	struct erase_addr	 a;
	struct erase_opts	 o;
	struct erase_counts	 c;
	char			 path[512], err[256];

	assert_int_equal(erase_addr_parse(X_PHONE, &a), 0);
	memset(&o, 0, sizeof(o));
	assert_int_equal(erase_run(f->sp, &a, &o, &c), 0);
	assert_int_equal(c.removed + c.messages + c.inbound + c.listed +
	    c.busy + c.failed, 0);
	spool_free(f->sp);
	assert_non_null(f->sp = spool_open(f->dir, 0, err, sizeof(err)));
	snprintf(path, sizeof(path), "%s/new", f->dir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(erase_run(f->sp, &a, &o, &c), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_parse),
		cmocka_unit_test(test_names_number),
		cmocka_unit_test(test_names_email),
		cmocka_unit_test_setup_teardown(test_run_nothing,
		    tu_spool_setup, tu_spool_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
