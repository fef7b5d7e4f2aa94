/*
 * test_valid_object.c: unit tests for lib/base/valid.c (the field rules of
 * conf/openapi.yaml): valid_error, valid_object on a table of fields, and
 * valid_batch.
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

/* valid_error and valid_object */

static void
test_valid_error(void **state)
{
	json_t	*e, *a;

	(void)state;
	e = json_object();
	valid_error(e, "recipient", "must be %d to %d digits", 8, 15);
	valid_error(e, "recipient", "second");
	valid_error(e, "payload[1].to", "bad");
	assert_int_equal(json_object_size(e), 2);
	a = json_object_get(e, "recipient");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_array_get(a, 0)),
	    "must be 8 to 15 digits");
	assert_string_equal(json_string_value(json_array_get(a, 1)), "second");
	json_decref(e);
}

static const struct field meta_fields[] = {
	{ "source", FIELD_STRING, FIELD_REQUIRED, 0, 0, NULL, NULL, 0 },
	{ "priority", FIELD_INTEGER, 0, 1, 5, NULL, NULL, 0 },
	FIELD_END
};

static const struct field message_fields[] = {
	{ "recipient", FIELD_STRING, FIELD_REQUIRED, 0, 0, valid_e164, NULL,
	    0 },
	{ "messageBody", FIELD_STRING, FIELD_REQUIRED | FIELD_NONEMPTY, 0, 10,
	    NULL, NULL, 0 },
	{ "sendAt", FIELD_STRING, FIELD_NULLABLE, 0, 0, valid_rfc3339, NULL,
	    0 },
	FIELD_END
};

static const struct field top_fields[] = {
	{ "messages", FIELD_ARRAY, FIELD_REQUIRED, 1, 3, NULL, message_fields,
	    FIELD_OBJECT },
	{ "name", FIELD_STRING, 0, 2, 4, NULL, NULL, 0 },
	{ "count", FIELD_INTEGER, 0, 0, 0, NULL, NULL, 0 },
	{ "flag", FIELD_BOOLEAN, 0, 0, 0, NULL, NULL, 0 },
	{ "fields", FIELD_STRMAP, 0, 0, 0, NULL, NULL, 0 },
	{ "meta", FIELD_OBJECT, 0, 0, 0, NULL, meta_fields, 0 },
	{ "tags", FIELD_ARRAY, 0, 0, 2, valid_ident, NULL, FIELD_STRING },
	{ "note", FIELD_STRING, FIELD_NULLABLE, 0, 0, NULL, NULL, 0 },
	FIELD_END
};

/* A body that passes top_fields. */
static json_t *
good_body(void)
{
	json_t		*v;
	json_error_t	 e;

	v = json_loads("{\"messages\":["
	    "{\"recipient\":\"+4915112345678\",\"messageBody\":\"hi\"},"
	    "{\"recipient\":\"+4915112345679\",\"messageBody\":\"yo\","
	    "\"sendAt\":\"2026-11-23T10:00:00Z\"}],"
	    "\"name\":\"abc\",\"count\":3,\"flag\":true,"
	    "\"fields\":{\"a\":\"x\",\"b\":\"y\"},"
	    "\"meta\":{\"source\":\"crm\",\"priority\":2},"
	    "\"tags\":[\"t1\",\"t2\"],\"note\":null}", 0, &e);
	if (v == NULL)
		fail_msg("good_body: %s", e.text);
	return v;
}

/* The number of messages in an errors object. */
static size_t
count_messages(const json_t *errors)
{
	const char	*k;
	json_t		*a;
	size_t		 n = 0;

	json_object_foreach((json_t *)errors, k, a) {
		assert_true(json_is_array(a));
		assert_true(json_array_size(a) > 0);
		n += json_array_size(a);
	}
	return n;
}

/*
 * Check body (good_body with one member replaced, or removed when
 * value is NULL) and return the errors object.
 */
static json_t *
check_with(const char *member, json_t *value, size_t *nadded)
{
	json_t	*body, *errors;
	size_t	 n;

	body = good_body();
	if (value == NULL)
		json_object_del(body, member);
	else
		json_object_set_new(body, member, value);
	errors = json_object();
	n = valid_object(body, top_fields, "", errors);
	assert_int_equal(n, count_messages(errors));
	if (nadded != NULL)
		*nadded = n;
	json_decref(body);
	return errors;
}

/* Assert errors holds exactly one path, path, and return its count. */
static void
assert_only_path(const json_t *errors, const char *path)
{
	const char	*k;
	json_t		*a;
	char		 keys[1024] = "";

	if (json_object_get(errors, path) == NULL ||
	    json_object_size(errors) != 1) {
		json_object_foreach((json_t *)errors, k, a) {
			(void)a;
			strncat(keys, k, sizeof(keys) - strlen(keys) - 3);
			strcat(keys, ", ");
		}
		fail_msg("wanted one error path \"%s\", got {%s}", path, keys);
	}
}

static void
test_object_good(void **state)
{
	json_t	*body, *errors;

	(void)state;
	body = good_body();
	errors = json_object();
	assert_int_equal(valid_object(body, top_fields, "", errors), 0);
	assert_int_equal(json_object_size(errors), 0);
	json_decref(body);
	json_decref(errors);
}

static void
test_object_minimal_good(void **state)
{
	json_t	*body, *errors;

	(void)state;
	/* Optional members may be absent. */
	body = json_pack("{s:[{s:s,s:s}]}", "messages", "recipient",
	    "+4915112345678", "messageBody", "x");
	errors = json_object();
	assert_int_equal(valid_object(body, top_fields, "", errors), 0);
	json_decref(body);
	json_decref(errors);
}

static void
test_object_required_missing(void **state)
{
	json_t	*errors;
	size_t	 n;

	(void)state;
	errors = check_with("messages", NULL, &n);
	assert_true(n >= 1);
	assert_only_path(errors, "messages");
	json_decref(errors);
}

static void
test_object_wrong_types(void **state)
{
	json_t	*errors;

	(void)state;
	/* A string where an integer goes. */
	errors = check_with("count", json_string("3"), NULL);
	assert_only_path(errors, "count");
	json_decref(errors);
	/* A real is not an integer. */
	errors = check_with("count", json_real(3.5), NULL);
	assert_only_path(errors, "count");
	json_decref(errors);
	/* An integer where a string goes. */
	errors = check_with("name", json_integer(42), NULL);
	assert_only_path(errors, "name");
	json_decref(errors);
	/* An object where an array goes. */
	errors = check_with("messages", json_object(), NULL);
	assert_only_path(errors, "messages");
	json_decref(errors);
	/* A string where an array goes. */
	errors = check_with("tags", json_string("t1"), NULL);
	assert_only_path(errors, "tags");
	json_decref(errors);
	/* An array where a string goes. */
	errors = check_with("name", json_pack("[s]", "abc"), NULL);
	assert_only_path(errors, "name");
	json_decref(errors);
	/* A string where a boolean goes. */
	errors = check_with("flag", json_string("true"), NULL);
	assert_only_path(errors, "flag");
	json_decref(errors);
	/* An array where an object goes. */
	errors = check_with("meta", json_array(), NULL);
	assert_only_path(errors, "meta");
	json_decref(errors);
}

static void
test_object_nullable(void **state)
{
	json_t	*errors;

	(void)state;
	/* note is NULLABLE: null is absent. */
	errors = check_with("note", json_null(), NULL);
	assert_int_equal(json_object_size(errors), 0);
	json_decref(errors);
	/* name is not: null is the wrong type. */
	errors = check_with("name", json_null(), NULL);
	assert_only_path(errors, "name");
	json_decref(errors);
}

/*
 * FIELD_REFERENCE, the one entry of every send route's table: null or
 * absent is none; a bad value is one message at its path.
 */
static void
test_object_reference(void **state)
{
	static const struct field t[] = { FIELD_REFERENCE, FIELD_END };
	json_t	*o, *errors;
	size_t	 i;
	const char *bad[] = { "\"\"", "5", "{}", "\"a\\nb\"",
	    "\"a\\u0085b\"", "\"a\\u0000b\"" };

	(void)state;
	errors = json_object();
	o = json_pack("{s:n}", "reference");
	assert_int_equal(valid_object(o, t, "", errors), 0);
	json_decref(o);
	o = json_pack("{}");
	assert_int_equal(valid_object(o, t, "", errors), 0);
	json_decref(o);
	o = json_pack("{s:s}", "reference", "order-1001");
	assert_int_equal(valid_object(o, t, "", errors), 0);
	json_decref(o);
	json_decref(errors);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errors = json_object();
		o = json_object();
		json_object_set_new(o, "reference", json_loads(bad[i],
		    JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
		assert_int_equal(valid_object(o, t, "payload[2]", errors), 1);
		assert_only_path(errors, "payload[2].reference");
		json_decref(o);
		json_decref(errors);
	}
}

static void
test_object_string_chars_not_bytes(void **state)
{
	json_t	*errors;

	(void)state;
	/* name: 2 to 4 characters.  "ééé": 3 chars, 6 bytes. */
	errors = check_with("name", json_string("\xc3\xa9\xc3\xa9\xc3\xa9"),
	    NULL);
	assert_int_equal(json_object_size(errors), 0);
	json_decref(errors);
	/* 4 chars, 8 bytes: still fine. */
	errors = check_with("name",
	    json_string("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"), NULL);
	assert_int_equal(json_object_size(errors), 0);
	json_decref(errors);
	/* 1 char, 2 bytes: under the minimum. */
	errors = check_with("name", json_string("\xc3\xa9"), NULL);
	assert_only_path(errors, "name");
	json_decref(errors);
	/* 5 chars: over. */
	errors = check_with("name",
	    json_string("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"), NULL);
	assert_only_path(errors, "name");
	json_decref(errors);
	/* 5 ASCII chars: over. */
	errors = check_with("name", json_string("abcde"), NULL);
	assert_only_path(errors, "name");
	json_decref(errors);
}

static void
test_object_string_embedded_nul(void **state)
{
	json_t	*errors;

	(void)state;
	errors = check_with("name", json_stringn("a\0b", 3), NULL);
	assert_only_path(errors, "name");
	json_decref(errors);
}

static void
test_object_nonempty(void **state)
{
	json_t	*body, *errors;

	(void)state;
	body = good_body();
	json_object_set_new(json_array_get(json_object_get(body, "messages"),
	    0), "messageBody", json_string(""));
	errors = json_object();
	assert_true(valid_object(body, top_fields, "", errors) >= 1);
	assert_only_path(errors, "messages[0].messageBody");
	json_decref(body);
	json_decref(errors);
}

static void
test_object_array_limits(void **state)
{
	json_t	*errors, *a;

	(void)state;
	/* messages: 1 to 3 items. */
	errors = check_with("messages", json_array(), NULL);
	assert_only_path(errors, "messages");
	json_decref(errors);
	a = json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]",
	    "recipient", "+4915112345678", "messageBody", "a",
	    "recipient", "+4915112345678", "messageBody", "b",
	    "recipient", "+4915112345678", "messageBody", "c",
	    "recipient", "+4915112345678", "messageBody", "d");
	errors = check_with("messages", a, NULL);
	assert_only_path(errors, "messages");
	json_decref(errors);
	/* tags: at most 2. */
	errors = check_with("tags", json_pack("[s,s,s]", "a", "b", "c"), NULL);
	assert_only_path(errors, "tags");
	json_decref(errors);
}

static void
test_object_array_of_strings(void **state)
{
	json_t	*errors;

	(void)state;
	/* Each item is checked with the field's validator. */
	errors = check_with("tags", json_pack("[s,s]", "ok", ".bad"), NULL);
	assert_only_path(errors, "tags[1]");
	json_decref(errors);
	/* And must be a string. */
	errors = check_with("tags", json_pack("[s,i]", "ok", 5), NULL);
	assert_only_path(errors, "tags[1]");
	json_decref(errors);
}

static void
test_object_nested_array_paths(void **state)
{
	json_t	*body, *errors, *m;
	size_t	 n;

	(void)state;
	body = good_body();
	m = json_object_get(body, "messages");
	json_object_set_new(json_array_get(m, 1), "recipient",
	    json_string("4915112345679"));
	errors = json_object();
	n = valid_object(body, top_fields, "", errors);
	assert_true(n >= 1);
	assert_only_path(errors, "messages[1].recipient");
	json_decref(errors);

	/* Several at once, in different items. */
	json_object_del(json_array_get(m, 0), "messageBody");
	json_object_set_new(json_array_get(m, 1), "sendAt",
	    json_string("soon"));
	errors = json_object();
	n = valid_object(body, top_fields, "", errors);
	assert_int_equal(n, count_messages(errors));
	assert_non_null(json_object_get(errors, "messages[0].messageBody"));
	assert_non_null(json_object_get(errors, "messages[1].recipient"));
	assert_non_null(json_object_get(errors, "messages[1].sendAt"));
	assert_int_equal(json_object_size(errors), 3);
	json_decref(errors);
	json_decref(body);
}

static void
test_object_item_not_object(void **state)
{
	json_t	*errors;

	(void)state;
	errors = check_with("messages", json_pack("[s]", "x"), NULL);
	assert_only_path(errors, "messages[0]");
	json_decref(errors);
}

static void
test_object_nested_object(void **state)
{
	json_t	*errors;

	(void)state;
	errors = check_with("meta", json_pack("{s:i}", "source", 5), NULL);
	assert_only_path(errors, "meta.source");
	json_decref(errors);
	errors = check_with("meta", json_pack("{s:i}", "priority", 2), NULL);
	assert_only_path(errors, "meta.source");
	json_decref(errors);
	/* Integer min/max: priority 1 to 5. */
	errors = check_with("meta", json_pack("{s:s,s:i}", "source", "x",
	    "priority", 9), NULL);
	assert_only_path(errors, "meta.priority");
	json_decref(errors);
	errors = check_with("meta", json_pack("{s:s,s:i}", "source", "x",
	    "priority", 0), NULL);
	assert_only_path(errors, "meta.priority");
	json_decref(errors);
}

static void
test_object_strmap(void **state)
{
	json_t		*errors;
	const char	*k;
	json_t		*a;
	int		 seen = 0;

	(void)state;
	errors = check_with("fields", json_pack("{s:s,s:i}", "a", "x", "b", 5),
	    NULL);
	assert_int_equal(json_object_size(errors), 1);
	json_object_foreach(errors, k, a) {
		(void)a;
		/* "fields.b" or "fields": under the map either way. */
		if (strncmp(k, "fields", 6) == 0)
			seen = 1;
	}
	assert_true(seen);
	json_decref(errors);
	/* An empty map is a map. */
	errors = check_with("fields", json_object(), NULL);
	assert_int_equal(json_object_size(errors), 0);
	json_decref(errors);
	/* Not a map at all. */
	errors = check_with("fields", json_pack("[s]", "a"), NULL);
	assert_only_path(errors, "fields");
	json_decref(errors);
}

static void
test_object_unknown_members(void **state)
{
	json_t	*body, *errors;

	(void)state;
	errors = check_with("bogus", json_integer(1), NULL);
	assert_only_path(errors, "bogus");
	json_decref(errors);
	/* Inside an array item. */
	body = good_body();
	json_object_set_new(json_array_get(json_object_get(body, "messages"),
	    1), "extra", json_true());
	errors = json_object();
	assert_true(valid_object(body, top_fields, "", errors) >= 1);
	assert_only_path(errors, "messages[1].extra");
	json_decref(errors);
	json_decref(body);
}

/*
 * Paths past the room valid_object makes them in (128 bytes: a member's
 * long name), and an item's index of more than one digit.
 */
static void
test_object_long_paths(void **state)
{
	static const struct field list_fields[] = {
		{ .name = "list", .type = FIELD_ARRAY, .sub = message_fields,
		    .item = FIELD_OBJECT },
		FIELD_END
	};
	json_t	*body, *msgs, *errors;
	char	 key[301], path[400];

	(void)state;
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	body = json_pack("{s:[]}", "list");
	msgs = json_object_get(body, "list");
	while (json_array_size(msgs) < 13)
		json_array_append_new(msgs, json_pack("{s:s, s:s}",
		    "recipient", "+4915112345678", "messageBody", "hi"));
	json_object_set_new(json_array_get(msgs, 12), key, json_true());
	errors = json_object();
	assert_int_equal(valid_object(body, list_fields, "", errors), 1);
	snprintf(path, sizeof(path), "list[12].%s", key);
	assert_only_path(errors, path);
	json_decref(errors);
	json_decref(body);
	errors = check_with(key, json_integer(1), NULL);
	assert_only_path(errors, key);
	json_decref(errors);
}

static void
test_object_prefix(void **state)
{
	json_t	*obj, *errors;

	(void)state;
	obj = json_pack("{s:s,s:s}", "recipient", "bad", "typo", "x");
	errors = json_object();
	assert_true(valid_object(obj, message_fields, "payload[3]",
	    errors) >= 3);
	assert_non_null(json_object_get(errors, "payload[3].recipient"));
	assert_non_null(json_object_get(errors, "payload[3].messageBody"));
	assert_non_null(json_object_get(errors, "payload[3].typo"));
	assert_int_equal(json_object_size(errors), 3);
	json_decref(obj);
	json_decref(errors);
}

static void
test_object_adds_to_existing(void **state)
{
	json_t	*obj, *errors;
	size_t	 n;

	(void)state;
	errors = json_object();
	valid_error(errors, "earlier", "already here");
	obj = json_pack("{s:s}", "recipient", "+4915112345678");
	n = valid_object(obj, message_fields, "", errors);
	/* Returns what it added, not the total. */
	assert_int_equal(n, 1);
	assert_non_null(json_object_get(errors, "earlier"));
	assert_non_null(json_object_get(errors, "messageBody"));
	json_decref(obj);
	json_decref(errors);
}

static void
test_object_not_an_object(void **state)
{
	json_t	*v, *errors;

	(void)state;
	v = json_pack("[i]", 1);
	errors = json_object();
	assert_true(valid_object(v, top_fields, "", errors) >= 1);
	assert_true(json_object_size(errors) >= 1);
	json_decref(v);
	json_decref(errors);
}

static void
test_batch(void **state)
{
	json_t	*body, *errors;

	(void)state;
	body = json_pack("{s:[i,i,i]}", "messages", 1, 2, 3);
	errors = json_object();
	assert_int_equal(valid_batch(body, "messages", 3, errors), 0);
	assert_int_equal(json_object_size(errors), 0);
	assert_int_equal(valid_batch(body, "messages", 1000, errors), 0);
	assert_int_equal(json_object_size(errors), 0);
	assert_int_equal(valid_batch(body, "messages", 2, errors), 1);
	assert_only_path(errors, "messages");
	assert_int_equal(count_messages(errors), 1);
	json_decref(errors);
	json_decref(body);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_error),
		cmocka_unit_test(test_object_good),
		cmocka_unit_test(test_object_minimal_good),
		cmocka_unit_test(test_object_required_missing),
		cmocka_unit_test(test_object_wrong_types),
		cmocka_unit_test(test_object_nullable),
		cmocka_unit_test(test_object_reference),
		cmocka_unit_test(test_object_string_chars_not_bytes),
		cmocka_unit_test(test_object_string_embedded_nul),
		cmocka_unit_test(test_object_nonempty),
		cmocka_unit_test(test_object_array_limits),
		cmocka_unit_test(test_object_array_of_strings),
		cmocka_unit_test(test_object_nested_array_paths),
		cmocka_unit_test(test_object_item_not_object),
		cmocka_unit_test(test_object_nested_object),
		cmocka_unit_test(test_object_strmap),
		cmocka_unit_test(test_object_unknown_members),
		cmocka_unit_test(test_object_prefix),
		cmocka_unit_test(test_object_adds_to_existing),
		cmocka_unit_test(test_object_long_paths),
		cmocka_unit_test(test_object_not_an_object),
		cmocka_unit_test(test_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
