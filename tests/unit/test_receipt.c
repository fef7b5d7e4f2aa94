/*
 * test_receipt.c: receipts' signatures against the providers' published
 * examples, form bodies, and the statuses they map to.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "spool/receipt.h"

/* Twilio's documented example (Security: validating requests). */
static void
test_twilio_signature(void **state)
{
	const char	*url = "https://mycompany.com/myapp.php?foo=1&bar=2";
	json_t		*p;

	(void)state;
	p = json_pack("{s:s, s:s, s:s, s:s, s:s}", "CallSid",
	    "CA1234567890ABCDE", "Caller", "+12349013030", "Digits", "1234",
	    "From", "+12349013030", "To", "+18005551212");
	assert_true(receipt_twilio_verify("12345", url, p,
	    "0/KCTR6DLpKmkAf8muzZqo1nDgQ="));
	assert_false(receipt_twilio_verify("12346", url, p,
	    "0/KCTR6DLpKmkAf8muzZqo1nDgQ="));
	assert_false(receipt_twilio_verify("12345", "https://mycompany.com/"
	    "myapp.php?foo=1&bar=3", p, "0/KCTR6DLpKmkAf8muzZqo1nDgQ="));
	assert_false(receipt_twilio_verify("12345", url, p, ""));
	/* Anyone can sign with no key: such a token checks nothing. */
	assert_false(receipt_twilio_verify("", url, p,
	    "3cdcKJhDP37mDuun3bl3LgM2ApY="));
	assert_false(receipt_twilio_verify("12345", url, p, NULL));
	json_object_set_new(p, "Digits", json_string("1235"));
	assert_false(receipt_twilio_verify("12345", url, p,
	    "0/KCTR6DLpKmkAf8muzZqo1nDgQ="));
	json_decref(p);
}

/* The Standard Webhooks specification's example. */
static void
test_standard_webhooks(void **state)
{
	const char	*secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	const char	*body = "{\"test\": 2432232314}";
	const char	*sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
	char		*made;

	(void)state;
	made = receipt_stdwh_sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek",
	    "1614265330", body, strlen(body));
	assert_string_equal(made, sig);
	free(made);
	assert_true(receipt_stdwh_verify(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek",
	    "1614265330", body, strlen(body), sig, 1614265330));
	/* Among several, space-separated. */
	assert_true(receipt_stdwh_verify(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek",
	    "1614265330", body, strlen(body),
	    "v1,Zm9v v1a,xx v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
	    1614265330 + 299));
	/* Too old, too new, another id, another body, no "v1,". */
	assert_false(receipt_stdwh_verify(secret,
	    "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body, strlen(body),
	    sig, 1614265330 + 301));
	assert_false(receipt_stdwh_verify(secret,
	    "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body, strlen(body),
	    sig, 1614265330 - 301));
	assert_false(receipt_stdwh_verify(secret, "msg_other", "1614265330",
	    body, strlen(body), sig, 1614265330));
	assert_false(receipt_stdwh_verify(secret,
	    "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "{}", 2, sig,
	    1614265330));
	assert_false(receipt_stdwh_verify(secret,
	    "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body, strlen(body),
	    sig + 3, 1614265330));
	assert_false(receipt_stdwh_verify("not-whsec",
	    "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body, strlen(body),
	    sig, 1614265330));
	assert_null(receipt_stdwh_sign("nope", "a", "1", "", 0));
}

static void
test_meta_signature(void **state)
{
	const char	*body = "{\"a\":1}";

	(void)state;
	assert_true(receipt_meta_verify("secret", body, strlen(body),
	    "sha256=aa9e2e3575f5d7098b6caccd790888c36d5fdb63342a73bada2d6a"
	    "51747a8494"));
	assert_true(receipt_meta_verify("secret", body, strlen(body),
	    "sha256=AA9E2E3575F5D7098B6CACCD790888C36D5FDB63342A73BADA2D6A"
	    "51747A8494"));
	assert_false(receipt_meta_verify("secreT", body, strlen(body),
	    "sha256=aa9e2e3575f5d7098b6caccd790888c36d5fdb63342a73bada2d6a"
	    "51747a8494"));
	assert_false(receipt_meta_verify("secret", body, strlen(body),
	    "sha1=aa9e"));
	assert_false(receipt_meta_verify("secret", body, strlen(body), NULL));
	/* HMAC-SHA256 of the body with an empty key. */
	assert_false(receipt_meta_verify("", body, strlen(body),
	    "sha256=e0baad27ae5335a93e2979e6693e7630de7d66b4d5bfd687cdbf1f00"
	    "18f79cb8"));
}

/* A WhatsApp status's time: Unix seconds as digits, else now. */
static void
test_meta_time(void **state)
{
	const char	*now_only[] = { "", "soon", "12abc", "-5", "+5", " 5",
	    "0", "1.5", "253402300800", "99999999999999999999" };
	size_t		 i;

	(void)state;
	assert_int_equal(receipt_meta_time("1795428004", 7), 1795428004);
	assert_int_equal(receipt_meta_time("1", 7), 1);
	assert_int_equal(receipt_meta_time("253402300799", 7), 253402300799);
	assert_int_equal(receipt_meta_time(NULL, 7), 7);
	for (i = 0; i < sizeof(now_only) / sizeof(now_only[0]); i++)
		if (receipt_meta_time(now_only[i], 7) != 7)
			fail_msg("'%s' taken as a time", now_only[i]);
}

static void
test_form(void **state)
{
	json_t	*f;

	(void)state;
	f = receipt_form_parse("A=1&B=x+y%21&A=2&C&D=%C3%BC", 27);
	assert_non_null(f);
	assert_string_equal(json_string_value(json_object_get(f, "A")), "1");
	assert_string_equal(json_string_value(json_object_get(f, "B")),
	    "x y!");
	assert_string_equal(json_string_value(json_object_get(f, "C")), "");
	assert_string_equal(json_string_value(json_object_get(f, "D")),
	    "\xc3\xbc");
	json_decref(f);
	assert_null(receipt_form_parse("A=%zz", 5));
	assert_null(receipt_form_parse("A=%4", 4));
	assert_null(receipt_form_parse("A=%00", 5));
	assert_null(receipt_form_parse("A=%ff", 5));	/* not UTF-8 */
	f = receipt_form_parse("", 0);
	assert_int_equal(json_object_size(f), 0);
	json_decref(f);
}

static void
test_statuses(void **state)
{
	(void)state;
	assert_string_equal(receipt_twilio_status("delivered", 0), "delivered");
	assert_string_equal(receipt_twilio_status("failed", 0), "undelivered");
	assert_string_equal(receipt_twilio_status("undelivered", 0),
	    "undelivered");
	/* Events only: themselves, which move nothing. */
	assert_string_equal(receipt_twilio_status("queued", 0), "queued");
	assert_string_equal(receipt_twilio_status("sending", 0), "sending");
	assert_string_equal(receipt_twilio_status("accepted", 0), "accepted");
	assert_false(receipt_moves("sent", "sending"));
	assert_false(receipt_moves("sent", "accepted"));
	assert_null(receipt_twilio_status("scheduled", 0));
	assert_string_equal(receipt_twilio_status("completed", 1),
	    "delivered");
	assert_string_equal(receipt_twilio_status("no-answer", 1),
	    "undelivered");
	assert_null(receipt_twilio_status("ringing", 1));
	assert_string_equal(receipt_meta_status("read"), "read");
	assert_string_equal(receipt_meta_status("failed"), "undelivered");
	assert_null(receipt_meta_status("deleted"));
	/* Forward only. */
	assert_true(receipt_moves("sent", "delivered"));
	assert_true(receipt_moves("sent", "read"));
	assert_true(receipt_moves("delivered", "read"));
	assert_true(receipt_moves("sent", "undelivered"));
	assert_false(receipt_moves("read", "delivered"));
	assert_false(receipt_moves("delivered", "delivered"));
	assert_false(receipt_moves("delivered", "undelivered"));
	assert_false(receipt_moves("undelivered", "read"));
	assert_false(receipt_moves("queued", "delivered"));
	assert_false(receipt_moves("failed", "delivered"));
}

static void
test_index_key(void **state)
{
	char	a[41], b[41];

	(void)state;
	receipt_index_key("whatsapp", "wamid.X", a);
	receipt_index_key("twilio", "wamid.X", b);
	assert_int_equal(strlen(a), 40);
	assert_int_equal(strspn(a, "0123456789abcdef"), 40);
	assert_string_not_equal(a, b);
}

/* SMPP 3.4 delivery receipts: the text of Appendix B and the states. */
static void
test_smpp(void **state)
{
	static const char text[] = "id:0A1B2C sub:001 dlvrd:001 submit "
	    "date:2611231200 done date:2611231201 stat:DELIVRD err:000 "
	    "text:hello stat:X";
	static const char bad_id[] = "id:\xff" "1 stat:DELIVRD";
	static const char bad_err[] = "id:7 stat:DELIVRD err:\x01";
	char	id[66], stat[16], err[16];

	(void)state;
	assert_int_equal(receipt_smpp_text(text, strlen(text), id, sizeof(id),
	    stat, sizeof(stat), err, sizeof(err)), 0);
	assert_string_equal(id, "0A1B2C");
	assert_string_equal(stat, "DELIVRD");
	assert_string_equal(err, "000");
	/* Keys in any case and order; err optional; "sub:id:" is no id. */
	assert_int_equal(receipt_smpp_text("Stat:UNDELIV sub:id:9 ID:77", 27,
	    id, sizeof(id), stat, sizeof(stat), err, sizeof(err)), 0);
	assert_string_equal(id, "77");
	assert_string_equal(stat, "UNDELIV");
	assert_string_equal(err, "");
	/* No id, no stat, or one too long: not a receipt. */
	assert_int_equal(receipt_smpp_text("stat:DELIVRD", 12, id, sizeof(id),
	    stat, sizeof(stat), err, sizeof(err)), -1);
	assert_int_equal(receipt_smpp_text("id:1 stat:", 10, id, sizeof(id),
	    stat, sizeof(stat), err, sizeof(err)), -1);
	assert_int_equal(receipt_smpp_text("id:123456 stat:DELIVRD", 22, id,
	    4, stat, sizeof(stat), err, sizeof(err)), -1);
	/* The text is not NUL-terminated: len bounds it. */
	assert_int_equal(receipt_smpp_text("id:12 stat:DELIVRDxyz", 18, id,
	    sizeof(id), stat, sizeof(stat), err, sizeof(err)), 0);
	assert_string_equal(stat, "DELIVRD");
	/* Bytes that are not printable ASCII: no id, no err. */
	assert_int_equal(receipt_smpp_text(bad_id, strlen(bad_id), id,
	    sizeof(id), stat, sizeof(stat), err, sizeof(err)), -1);
	assert_int_equal(receipt_smpp_text(bad_err, strlen(bad_err), id,
	    sizeof(id), stat, sizeof(stat), err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_true(receipt_smpp_word("0A1B-2c_~!", 10));
	assert_false(receipt_smpp_word("", 0));
	assert_false(receipt_smpp_word("a b", 3));
	assert_false(receipt_smpp_word("a\x7f", 2));
	assert_false(receipt_smpp_word("\xd0\x96", 2));

	assert_string_equal(receipt_smpp_status("DELIVRD"), "delivered");
	assert_string_equal(receipt_smpp_status("UNDELIV"), "undelivered");
	assert_string_equal(receipt_smpp_status("EXPIRED"), "undelivered");
	assert_string_equal(receipt_smpp_status("REJECTD"), "undelivered");
	assert_string_equal(receipt_smpp_status("DELETED"), "undelivered");
	assert_string_equal(receipt_smpp_status("UNKNOWN"), "undelivered");
	assert_null(receipt_smpp_status("ENROUTE"));
	assert_null(receipt_smpp_status("ACCEPTD"));
	assert_null(receipt_smpp_status(NULL));
	assert_string_equal(receipt_smpp_state(2), "DELIVRD");
	assert_string_equal(receipt_smpp_state(5), "UNDELIV");
	assert_string_equal(receipt_smpp_state(8), "REJECTD");
	assert_null(receipt_smpp_state(0));
	assert_null(receipt_smpp_state(9));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_twilio_signature),
		cmocka_unit_test(test_standard_webhooks),
		cmocka_unit_test(test_meta_signature),
		cmocka_unit_test(test_meta_time),
		cmocka_unit_test(test_form),
		cmocka_unit_test(test_statuses),
		cmocka_unit_test(test_index_key),
		cmocka_unit_test(test_smpp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
