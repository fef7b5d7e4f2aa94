/*
 * test_inbox.c: inbound messages (lib/spool/inbox.c): their document and
 * the object a client gets, their owner by the inbound key and its
 * check, and their keeping in inbox/ and inbox-new/, once per provider
 * id, whatever the order of a provider's deliveries.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "spool/inbox.h"
#include "spool/receipt.h"
#include "spool/spool.h"
#include "testutil.h"

static struct config *
conf(const char *text)
{
	struct config	*c;
	char		 err[512];

	if ((c = config_parse("/etc/msgspool/msgspool.conf", text,
	    strlen(text), err, sizeof(err))) == NULL)
		fail_msg("config_parse: %s", err);
	return c;
}

static json_t *
sms(const char *pmid, const char *to)
{
	json_t	*doc;

	doc = inbox_new("sms", "twilio", pmid, "+4915112345678", to, "Yes",
	    "text", NULL, 1795428000);
	assert_non_null(doc);
	return doc;
}

static int
exists(const struct tu_spool *f, const char *area, const char *id)
{
	char	path[512];

	snprintf(path, sizeof(path), "%s/%s/%s.json", f->dir, area, id);
	return access(path, F_OK) == 0;
}

static void
test_document_and_object(void **state)
{
	static const char *const keys[] = { "id", "direction", "channel",
	    "from", "to", "text", "type", "receivedAt", "provider",
	    "providerMessageId", "media" };
	json_t		*doc, *o, *v;
	const char	*k;
	size_t		 i = 0;

	(void)state;
	doc = inbox_new("ott", "whatsapp", "wamid.1", "4915112345678",
	    "+15550783881", NULL, "image", json_pack("[s]", "1234"),
	    1795428000);
	assert_non_null(doc);
	assert_true(ulid_valid(json_string_value(json_object_get(doc, "id"))));
	assert_int_equal(json_integer_value(json_object_get(doc, "version")),
	    1);
	assert_null(inbox_client(doc));
	assert_null(inbox_text(doc));
	assert_string_equal(inbox_from(doc), "4915112345678");
	assert_string_equal(inbox_to(doc), "+15550783881");
	o = inbox_object(doc);
	/* Every member in its order, none of the spool's own. */
	json_object_foreach(o, k, v) {
		assert_true(i < sizeof(keys) / sizeof(keys[0]));
		assert_string_equal(k, keys[i++]);
	}
	assert_int_equal(i, sizeof(keys) / sizeof(keys[0]));
	assert_string_equal(json_string_value(json_object_get(o,
	    "direction")), "inbound");
	assert_string_equal(json_string_value(json_object_get(o,
	    "receivedAt")), "2026-11-23T10:00:00Z");
	assert_true(json_is_null(json_object_get(o, "text")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    o, "media"), 0)), "1234");
	json_decref(o);
	json_decref(doc);
	/* No provider id, no media: null and []. */
	doc = inbox_new("sms", "smpp", NULL, "+4915112345678", "+4930901820",
	    "hi", "text", NULL, 1795428000);
	o = inbox_object(doc);
	assert_true(json_is_null(json_object_get(o, "providerMessageId")));
	assert_int_equal(json_array_size(json_object_get(o, "media")), 0);
	json_decref(o);
	json_decref(doc);
}

static void
test_owner_and_check(void **state)
{
	struct config	*c;
	json_t		*doc;
	char		 err[512];

	(void)state;
	c = conf("[sms]\ninbound = +4930900000\n"
	    "[client.acme]\ninbound = +15005550006, +4930901820\t12345\n"
	    "[client.other]\ninbound = +4930901821\n"
	    "[client.none]\nwebhook-events = sent\n"
	    "[client.bad]\ninbound = 030901820\n"
	    "[client.short]\ninbound = +1234567\n"
	    "[client.twice]\ninbound = +4930901821\n");
	assert_string_equal(inbox_owner(c, "+15005550006"), "acme");
	assert_string_equal(inbox_owner(c, "+4930901820"), "acme");
	assert_string_equal(inbox_owner(c, "12345"), "acme");
	assert_string_equal(inbox_owner(c, "+4930901821"), "other");
	/* Whole numbers only; a section that is no client's lists none. */
	assert_null(inbox_owner(c, "+493090182"));
	assert_null(inbox_owner(c, "+4930900000"));
	assert_null(inbox_owner(c, ""));
	assert_null(inbox_owner(NULL, "+15005550006"));
	doc = sms("SM1", "+4930901820");
	assert_int_equal(inbox_set_owner(doc, c), 1);
	assert_string_equal(inbox_client(doc), "acme");
	json_object_set_new(doc, "to", json_string("+4930909999"));
	assert_int_equal(inbox_set_owner(doc, c), 0);
	assert_true(json_is_null(json_object_get(doc, "client")));
	json_decref(doc);
	assert_int_equal(inbox_check_section(c, "client.acme", err,
	    sizeof(err)), 0);
	assert_int_equal(inbox_check_section(c, "client.none", err,
	    sizeof(err)), 0);
	/* Nine digits without "+": no E.164 number, too long for a short
	 * code. */
	assert_int_equal(inbox_check_section(c, "client.bad", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "030901820"));
	assert_int_equal(inbox_check_section(c, "client.short", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "+1234567"));
	assert_int_equal(inbox_check_section(c, "client.twice", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "[client.other]"));
	config_free(c);
}

static void
test_keep_once(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*a, *b, *c, *got;
	char		 first[ULID_LEN + 1], err[256];
	int		 dup;

	a = sms("SM0001", "+4930901820");
	snprintf(first, sizeof(first), "%s", json_string_value(
	    json_object_get(a, "id")));
	assert_int_equal(inbox_keep(f->sp, a, NULL, &dup), MSG_OK);
	assert_int_equal(dup, 0);
	assert_true(exists(f, INBOX_AREA, first));
	assert_true(exists(f, INBOX_NEW_AREA, first));
	got = inbox_load(f->sp, first, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, a));
	json_decref(got);
	/* Delivered again: nothing kept, the id the first one's. */
	b = sms("SM0001", "+4930901820");
	assert_int_equal(inbox_keep(f->sp, b, NULL, &dup), MSG_OK);
	assert_int_equal(dup, 1);
	assert_string_equal(json_string_value(json_object_get(b, "id")),
	    first);
	/* Another provider's id of the same text is another message. */
	c = sms("SM0002", "+4930901820");
	assert_int_equal(inbox_keep(f->sp, c, NULL, &dup), MSG_OK);
	assert_int_equal(dup, 0);
	assert_string_not_equal(json_string_value(json_object_get(c, "id")),
	    first);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	/* Without a provider id, each delivery is kept. */
	a = sms(NULL, "+4930901820");
	b = json_deep_copy(a);
	json_object_set_new(b, "id", json_string("01KXAMP1E0000000000000000B"));
	assert_int_equal(inbox_keep(f->sp, a, NULL, &dup), MSG_OK);
	assert_int_equal(inbox_keep(f->sp, b, NULL, &dup), MSG_OK);
	assert_int_equal(dup, 0);
	assert_true(exists(f, INBOX_AREA, "01KXAMP1E0000000000000000B"));
	json_decref(a);
	json_decref(b);
	/* A key of the caller's: the same for two documents is one. */
	a = sms(NULL, "+4930901820");
	b = sms(NULL, "+4930901820");
	assert_int_equal(inbox_keep(f->sp, a, "k1", &dup), MSG_OK);
	assert_int_equal(inbox_keep(f->sp, b, "k1", &dup), MSG_OK);
	assert_int_equal(dup, 1);
	json_decref(a);
	json_decref(b);
}

/* The first delivery took the index entry and died before it kept the
 * message: the next one keeps it under that id. */
static void
test_first_writer_died(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*doc;
	char		 key[41], had[ULID_LEN + 1];
	int		 dup;

	receipt_index_key("inbound-twilio", "SM0009", key);
	assert_int_equal(spool_index_add(f->sp, key,
	    "01KXAMP1E0000000000000000C", had), 0);
	doc = sms("SM0009", "+4930901820");
	assert_int_equal(inbox_keep(f->sp, doc, NULL, &dup), MSG_OK);
	assert_int_equal(dup, 0);
	assert_string_equal(json_string_value(json_object_get(doc, "id")),
	    "01KXAMP1E0000000000000000C");
	assert_true(exists(f, INBOX_AREA, "01KXAMP1E0000000000000000C"));
	assert_true(exists(f, INBOX_NEW_AREA, "01KXAMP1E0000000000000000C"));
	json_decref(doc);
}

static void
test_load(void **state)
{
	struct tu_spool	*f = *state;
	json_t		*doc;
	char		 err[256], path[512];

	errno = 0;
	assert_null(inbox_load(f->sp, "01KXAMP1E0000000000000000D", err,
	    sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_null(inbox_load(f->sp, "../../etc", err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	/* A document of ours that is no inbound message. */
	doc = json_pack("{s:i, s:s}", "version", 1, "id",
	    "01KXAMP1E0000000000000000E");
	assert_int_equal(spool_area_store(f->sp, INBOX_AREA,
	    (const json_t **)&doc, 1), MSG_OK);
	json_decref(doc);
	assert_null(inbox_load(f->sp, "01KXAMP1E0000000000000000E", err,
	    sizeof(err)));
	assert_int_equal(errno, EINVAL);
	/* Nor a file that is not JSON. */
	snprintf(path, sizeof(path), "%s/inbox/01KXAMP1E0000000000000000F.json",
	    f->dir);
	tu_write_text(path, "not json");
	assert_null(inbox_load(f->sp, "01KXAMP1E0000000000000000F", err,
	    sizeof(err)));
	assert_int_equal(errno, EINVAL);
}

int
main(void)
{
#define T(fn)	cmocka_unit_test_setup_teardown(fn, tu_spool_setup, \
		    tu_spool_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_document_and_object),
		cmocka_unit_test(test_owner_and_check),
		T(test_keep_once),
		T(test_first_writer_died),
		T(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
