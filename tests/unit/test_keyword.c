/*
 * test_keyword.c: unit tests for lib/content/keyword.c: how an inbound
 * text is folded and matched against a client's keywords (every default
 * one, case, blanks, a keyword inside a longer text), the lists, replies
 * and stop-channels of a config and the values refused, and the reply's
 * id and document (msgspool.conf(5), Client sections; msgspool-spool(5),
 * Keywords).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/ulid.h"
#include "content/keyword.h"
#include "spool/inbox.h"
#include "spool/msgdoc.h"

static struct config *
conf(const char *text)
{
	struct config	*c;
	char		 err[256];

	if ((c = config_parse("/etc/msgspool/msgspool.conf", text,
	    strlen(text), err, sizeof(err))) == NULL)
		fail_msg("config_parse: %s", err);
	return c;
}

/* The defaults, as a client without keys of its own has them. */
static const struct keywords defaults = {
	{ KEYWORD_STOP_DEFAULT, KEYWORD_START_DEFAULT, KEYWORD_HELP_DEFAULT },
	{ NULL, NULL, NULL }, 0
};

static int
folds(const char *s, char *out, size_t len)
{
	return keyword_fold(s, strlen(s), out, len);
}

static void
test_fold(void **state)
{
	char	out[KEYWORD_MAX + 1];

	(void)state;
	assert_int_equal(folds("  Stop \t All\r\n", out, sizeof(out)), 8);
	assert_string_equal(out, "stop all");
	assert_int_equal(folds("OPT\xc2\xa0\xe2\x80\x83OUT", out,
	    sizeof(out)), 7);	/* a no-break space, an em space */
	assert_string_equal(out, "opt out");
	/* Latin, Greek and Cyrillic capitals; the rest as they are. */
	assert_true(folds("ARR\xc3\x8aT \xce\xa3\xce\xa4\xce\x9f\xce\xa0 "
	    "\xd0\xa1\xd0\xa2\xd0\x9e\xd0\x9f \xc5\x81\xc3\x9f 1!", out,
	    sizeof(out)) > 0);
	assert_string_equal(out, "arr\xc3\xaat \xcf\x83\xcf\x84\xce\xbf\xcf"
	    "\x80 \xd1\x81\xd1\x82\xd0\xbe\xd0\xbf \xc5\x82\xc3\x9f 1!");
	assert_int_equal(folds("", out, sizeof(out)), 0);
	assert_int_equal(folds(" \t ", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* Not UTF-8, a control character, too long: no keyword. */
	assert_int_equal(folds("st\xffop", out, sizeof(out)), -1);
	assert_int_equal(folds("\xc0\xb3", out, sizeof(out)), -1);
	assert_int_equal(folds("\xed\xa0\x80", out, sizeof(out)), -1);
	assert_int_equal(folds("\xe2\x80", out, sizeof(out)), -1);
	assert_int_equal(folds("st\x01op", out, sizeof(out)), -1);
	assert_int_equal(folds("st\xc2\x85op", out, sizeof(out)), -1);
	assert_int_equal(keyword_fold("st\0op", 5, out, sizeof(out)), -1);
	assert_int_equal(folds("STOP", out, 4), -1);
	assert_int_equal(folds("STOP", out, 5), 4);
	assert_int_equal(folds("\xd0\xa1", out, 2), -1);
}

static void
test_every_default_keyword(void **state)
{
	static const struct {
		const char	*text;
		int		 k;
	} cases[] = {
		{ "STOP", KEYWORD_STOP }, { "STOPALL", KEYWORD_STOP },
		{ "STOP ALL", KEYWORD_STOP }, { "UNSUBSCRIBE", KEYWORD_STOP },
		{ "CANCEL", KEYWORD_STOP }, { "END", KEYWORD_STOP },
		{ "QUIT", KEYWORD_STOP }, { "REVOKE", KEYWORD_STOP },
		{ "OPTOUT", KEYWORD_STOP }, { "OPT OUT", KEYWORD_STOP },
		{ "START", KEYWORD_START }, { "UNSTOP", KEYWORD_START },
		{ "YES", KEYWORD_START }, { "SUBSCRIBE", KEYWORD_START },
		{ "HELP", KEYWORD_HELP }, { "INFO", KEYWORD_HELP },
	};
	char	text[64];
	size_t	i, j;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(keyword_match(&defaults, cases[i].text),
		    cases[i].k);
		/* Any case, blanks around and between. */
		for (j = 0; cases[i].text[j] != '\0'; j++)
			text[j] = (char)(j % 2 && cases[i].text[j] != ' ' ?
			    cases[i].text[j] + 32 : cases[i].text[j]);
		text[j] = '\0';
		assert_int_equal(keyword_match(&defaults, text), cases[i].k);
		snprintf(text, sizeof(text), " \t%s\n", cases[i].text);
		assert_int_equal(keyword_match(&defaults, text), cases[i].k);
	}
	assert_int_equal(keyword_match(&defaults, "stop   all"),
	    KEYWORD_STOP);
	assert_int_equal(keyword_match(&defaults, "Opt\tOut"), KEYWORD_STOP);
}

static void
test_no_keyword(void **state)
{
	static const char *const texts[] = {
		"", " ", "STOP please", "please stop", "Don't STOP",
		"STOP.", "STOP!", "\"STOP\"", "STOPP", "ST OP", "OPT-OUT",
		"OPTOUTS", "HELP ME", "yes, Tuesday at 10 is fine", "END OF",
		"stop all of it", "S T O P",
		"STOP STOP STOP STOP STOP STOP STOP STOP STOP STOP STOP STOP "
		    "STOP STOP",
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		assert_int_equal(keyword_match(&defaults, texts[i]), -1);
	assert_int_equal(keyword_match(&defaults, NULL), -1);
}

static void
test_config(void **state)
{
	struct config	*c;
	struct keywords	 kw;
	char		 err[512] = "";

	(void)state;
	c = conf("[client.acme]\n"
	    "stop-keywords = ARR\xc3\x8aT,  Stop  ,desinscrire\n"
	    "start-keywords = \n"
	    "help-keywords = AIDE\n"
	    "stop-channels = sms, voice\n"
	    "stop-reply = ACME: you will get no more messages.#1 # a comment\n"
	    "help-reply = ACME: help at acme.example\n"
	    "[client.plain]\nrate = 5/s\n");
	if (keyword_config(c, "acme", &kw, err, sizeof(err)) == -1)
		fail_msg("keyword_config: %s", err);
	assert_int_equal(kw.stop_voice, 1);
	assert_string_equal(kw.reply[KEYWORD_STOP],
	    "ACME: you will get no more messages.#1");
	assert_null(kw.reply[KEYWORD_START]);
	assert_string_equal(kw.reply[KEYWORD_HELP],
	    "ACME: help at acme.example");
	assert_int_equal(keyword_match(&kw, "arr\xc3\xaat"), KEYWORD_STOP);
	assert_int_equal(keyword_match(&kw, "STOP"), KEYWORD_STOP);
	assert_int_equal(keyword_match(&kw, "D\xc3\xa9sinscrire"), -1);
	assert_int_equal(keyword_match(&kw, "DESINSCRIRE"), KEYWORD_STOP);
	/* Its lists replace the defaults; an empty one is none. */
	assert_int_equal(keyword_match(&kw, "END"), -1);
	assert_int_equal(keyword_match(&kw, "START"), -1);
	assert_int_equal(keyword_match(&kw, "aide"), KEYWORD_HELP);
	assert_int_equal(keyword_match(&kw, "HELP"), -1);
	/* A client without keys of its own, or no section: the defaults. */
	if (keyword_config(c, "plain", &kw, err, sizeof(err)) == -1)
		fail_msg("keyword_config: %s", err);
	assert_string_equal(kw.list[KEYWORD_STOP], KEYWORD_STOP_DEFAULT);
	assert_int_equal(kw.stop_voice, 0);
	assert_null(kw.reply[KEYWORD_STOP]);
	assert_int_equal(keyword_config(c, "nosection", &kw, err,
	    sizeof(err)), 0);
	assert_int_equal(keyword_match(&kw, "unstop"), KEYWORD_START);
	assert_int_equal(keyword_check_section(c, "client.acme", err,
	    sizeof(err)), 0);
	assert_int_equal(keyword_check_section(c, "sms", err, sizeof(err)),
	    0);
	config_free(c);
}

static void
test_config_refused(void **state)
{
	static const struct {
		const char	*text;
		const char	*why;
	} cases[] = {
		{ "stop-keywords =\n", "[client.acme] stop-keywords: empty" },
		{ "stop-keywords = STOP,,END\n",
		    "[client.acme] stop-keywords: '' is no keyword" },
		{ "help-keywords = HELP, \n",
		    "[client.acme] help-keywords: '' is no keyword" },
		{ "help-keywords = HELP, ,INFO\n",
		    "[client.acme] help-keywords: ' ' is no keyword" },
		{ "stop-keywords = STOP\001\n",
		    "[client.acme] stop-keywords: 'STOP\001' is no keyword" },
		{ "stop-keywords = \xff\n",
		    "[client.acme] stop-keywords: '\xff' is no keyword" },
		{ "help-keywords = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		    "AAAAAAAAAAAAAAAAAAAAAAAAA\n",		/* 65 bytes */
		    "[client.acme] help-keywords: 'AAAA" },
		{ "start-keywords = START, stop\n",
		    "[client.acme] start-keywords: 'stop' is in stop-keywords "
		    "too" },
		{ "stop-keywords = STOP, INFO\n",
		    "[client.acme] stop-keywords: 'info' is in help-keywords "
		    "too" },
		{ "stop-reply =\n", "[client.acme] stop-reply: empty" },
		{ "help-reply = \xc3\x28\n",
		    "[client.acme] help-reply: not UTF-8" },
		{ "stop-channels = voice\n",
		    "[client.acme] stop-channels: must list sms" },
		{ "stop-channels = sms, email\n",
		    "[client.acme] stop-channels: 'email'" },
		{ "stop-channels = sms ott\n",
		    "[client.acme] stop-channels: 'ott'" },
	};
	struct config	*c;
	struct keywords	 kw;
	char		 text[2048], err[512], *reply;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "[client.acme]\n%s",
		    cases[i].text);
		c = conf(text);
		err[0] = '\0';
		assert_int_equal(keyword_check_section(c, "client.acme", err,
		    sizeof(err)), -1);
		if (strncmp(err, cases[i].why, strlen(cases[i].why)) != 0)
			fail_msg("%s: %s", cases[i].text, err);
		config_free(c);
	}
	/* One SMS's text at most: 1600 characters, not bytes. */
	reply = malloc(1601 * 2 + 64);
	assert_non_null(reply);
	strcpy(reply, "[client.acme]\nstop-reply = ");
	for (i = 0; i < 1600; i++)
		strcat(reply, "\xc3\xa9");
	strcat(reply, "\n");
	c = conf(reply);
	assert_int_equal(keyword_config(c, "acme", &kw, err, sizeof(err)), 0);
	config_free(c);
	reply[strlen(reply) - 1] = '\0';
	strcat(reply, "x\n");
	c = conf(reply);
	assert_int_equal(keyword_config(c, "acme", &kw, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "longer than 1600 characters"));
	config_free(c);
	free(reply);
}

static void
test_reply_id(void **state)
{
	const char	*in = "01M840Q7H2P5C7SYTHCZ984TVK";
	char		 a[ULID_LEN + 1], b[ULID_LEN + 1];
	char		 other[ULID_LEN + 1];

	(void)state;
	assert_int_equal(keyword_reply_id(in, a), 0);
	assert_int_equal(keyword_reply_id(in, b), 0);
	assert_string_equal(a, b);
	assert_true(ulid_valid(a));
	assert_string_not_equal(a, in);
	/* The inbound message's time; the rest its own. */
	assert_memory_equal(a, in, 10);
	assert_int_equal(ulid_time(a), ulid_time(in));
	assert_int_equal(keyword_reply_id("01M840Q7H2P5C7SYTHCZ984TVM",
	    other), 0);
	assert_string_not_equal(a, other);
	assert_memory_not_equal(a + 10, other + 10, 16);
	assert_int_equal(keyword_reply_id("not an id", a), -1);
	assert_int_equal(keyword_reply_id(NULL, a), -1);
}

static void
test_reply(void **state)
{
	json_t		*in, *doc, *msg;
	char		 id[ULID_LEN + 1];

	(void)state;
	assert_non_null(in = inbox_new("sms", "twilio", "SM1",
	    "+4915112345678", "+15005550006", "Stop", "text", NULL, 0));
	json_object_set_new(in, "client", json_string("acme"));
	assert_non_null(doc = keyword_reply(in, "+4915112345678",
	    KEYWORD_STOP, "ACME: stopped.", 1000));
	assert_int_equal(keyword_reply_id(msgdoc_id(in), id), 0);
	assert_string_equal(msgdoc_id(doc), id);
	assert_string_equal(msgdoc_channel(doc), "sms");
	assert_string_equal(msgdoc_client(doc), "acme");
	assert_string_equal(msgdoc_recipient(doc), "+4915112345678");
	msg = msgdoc_message(doc);
	assert_string_equal(json_string_value(json_object_get(msg, "from")),
	    "+15005550006");
	assert_string_equal(json_string_value(json_object_get(msg, "body")),
	    "ACME: stopped.");
	assert_int_equal(msgdoc_is_stop_reply(doc), 1);
	assert_string_equal(json_string_value(json_object_get(
	    json_object_get(doc, "inReplyTo"), "id")), msgdoc_id(in));
	assert_false(msgdoc_is_test(doc));
	json_decref(doc);
	/* Only a stop's reply is a stop confirmation. */
	assert_non_null(doc = keyword_reply(in, "+4915112345678",
	    KEYWORD_HELP, "ACME: help.", 1000));
	assert_int_equal(msgdoc_is_stop_reply(doc), 0);
	assert_string_equal(json_string_value(json_object_get(
	    json_object_get(doc, "inReplyTo"), "keyword")), "help");
	json_decref(doc);
	/* No client, no reply. */
	json_object_set_new(in, "client", json_null());
	assert_null(keyword_reply(in, "+4915112345678", KEYWORD_STOP, "x",
	    1000));
	json_decref(in);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_every_default_keyword),
		cmocka_unit_test(test_no_keyword),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_config_refused),
		cmocka_unit_test(test_reply_id),
		cmocka_unit_test(test_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
