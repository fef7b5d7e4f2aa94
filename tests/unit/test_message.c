/*
 * test_message.c: unit tests for spooler/providers/message.c, the one email
 * builder (GMime) of the file and smtp providers: the headers and their
 * encodings (RFC 2047 words, quoted display names, RFC 2231 file names),
 * the parts, the line ends, what is refused, the attachments stored once
 * read back from blobs/, and the same bytes every time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "base/config.h"
#include "base/msgspool.h"
#include "content/unsub.h"
#include "providers/message.h"
#include "spool/blob.h"
#include "spool/spool.h"
#include "testutil.h"

/* An id of Mon, 23 Nov 2026 10:00:00 UTC (1795428000000 ms). */
#define ID	"01M83XJ8800000000000000000"

/* A message with one attachment; change it as a test needs.  Free it. */
static json_t *
receipt(void)
{
	json_t	*msg;

	msg = json_pack("{s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}",
	    "from", "Shop <shop@example.com>", "to", "ann@example.net",
	    "subject", "Receipt", "html", "<p>Total: 5 &amp; more</p>",
	    "text", "Total = 5\n", "attachments", "name", "r.pdf",
	    "contentType", "application/pdf", "content", "JVBERi0xLjQK");
	assert_non_null(msg);
	return msg;
}

/* Build msg, without a spool; the test fails unless it is built. */
static struct message *
build(const json_t *msg)
{
	struct message	*m;
	enum msg_status	 st;
	char		 err[256];

	if ((m = message_build(NULL, NULL, ID, msg, NULL, NULL,
	    &st, err, sizeof(err))) == NULL)
		fail_msg("not built: %s", err);
	assert_int_equal(st, MSG_OK);
	assert_non_null(m->data);
	return m;
}

/* The unfolded value of header name ("From") in m; free it. */
static char *
header(const struct message *m, const char *name)
{
	const char	*p, *end, *head;
	char		*out, *q;
	size_t		 n = strlen(name), i;

	head = m->data;
	end = strstr(head, "\r\n\r\n");
	assert_non_null(end);
	for (p = head; p < end; p = strstr(p, "\r\n") + 2)
		if (strncmp(p, name, n) == 0 && p[n] == ':')
			break;
	if (p >= end)
		fail_msg("no %s header", name);
	p += n + 1;
	while (*p == ' ')
		p++;
	/* Up to the next line that does not begin with a blank. */
	for (i = 0; p + i < end + 2 && !(p[i] == '\r' && p[i + 1] == '\n' &&
	    p[i + 2] != ' ' && p[i + 2] != '\t'); i++)
		;
	assert_non_null(out = strndup(p, i));
	/* Unfold: CRLF before a blank goes (RFC 5322 section 2.2.3). */
	for (p = q = out; *p != '\0'; p++) {
		if (p[0] == '\r' && p[1] == '\n') {
			p++;
			continue;
		}
		*q++ = *p;
	}
	*q = '\0';
	return out;
}

#define HEADER_IS(m, name, want) do {					\
	char	*v_ = header(m, name);					\
	if (strcmp(v_, want) != 0) {					\
		print_error("%s: \"%s\"\n  wanted \"%s\"\n", name, v_,	\
		    want);						\
		free(v_);						\
		fail();							\
	}								\
	free(v_);							\
} while (0)

/* CRLF line ends only, 7 bits only. */
static void
assert_wire_form(const struct message *m)
{
	size_t	i;

	for (i = 0; i < m->len; i++) {
		if ((unsigned char)m->data[i] >= 0x80)
			fail_msg("8-bit byte at %zu", i);
		if (m->data[i] == '\n' && (i == 0 || m->data[i - 1] != '\r'))
			fail_msg("bare LF at %zu", i);
		if (m->data[i] == '\r' && (i + 1 == m->len ||
		    m->data[i + 1] != '\n'))
			fail_msg("bare CR at %zu", i);
	}
}

static void
test_headers(void **state)
{
	static const char head[] =
	    "Date: Mon, 23 Nov 2026 10:00:00 +0000\r\n"
	    "From: Shop <shop@example.com>\r\n"
	    "To: ann@example.net\r\n"
	    "Subject: Receipt\r\n"
	    "Message-ID: <" ID "@example.com>\r\n"
	    "MIME-Version: 1.0\r\n"
	    "Content-Type: multipart/mixed; boundary=\"=_mixed_" ID "\"\r\n"
	    "\r\n";
	struct message	*m;
	json_t		*msg = receipt();

	(void)state;
	m = build(msg);
	assert_int_equal(strlen(m->data), m->len);
	/* The headers in their order; the Date is when it was queued. */
	if (strncmp(m->data, head, sizeof(head) - 1) != 0)
		fail_msg("headers:\n%.300s", m->data);
	assert_string_equal(m->sender, "shop@example.com");
	assert_string_equal(m->recipient, "ann@example.net");
	assert_string_equal(m->id, "<" ID "@example.com>");
	assert_wire_form(m);
	message_free(m);
	json_decref(msg);
}

/* The links of a config where acme asks for them (content/unsub.h). */
static struct unsub *
links(void)
{
	static const char text[] =
	    "public-url = https://msg.example.com/\n"
	    "unsubscribe-secret = 0123456789abcdef01234567\n"
	    "[client.acme]\nlist-unsubscribe = yes\n";
	struct config	*cfg;
	struct unsub	*u;
	char		 err[256];

	if ((cfg = config_parse("/etc/msgspool/msgspool.conf", text,
	    strlen(text), err, sizeof(err))) == NULL ||
	    (u = unsub_new(cfg, err, sizeof(err))) == NULL)
		fail_msg("links: %s", err);
	config_free(cfg);
	return u;
}

/* RFC 8058: the one-click link of the recipient, for its client only. */
static void
test_list_unsubscribe(void **state)
{
	static const char head[] =
	    "Message-ID: <" ID "@example.com>\r\n"
	    "MIME-Version: 1.0\r\n"
	    "List-Unsubscribe: <https://msg.example.com/unsubscribe/"
	    "YWNtZTphbm5AZXhhbXBsZS5uZXQ."
	    "WAF3TH226l0IoUc-WZTrZ7bONx0gBLyHVGw2O67XqpY>\r\n"
	    "List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"
	    "Content-Type: multipart/mixed;";
	struct unsub	*u = links();
	struct message	*m, *again;
	enum msg_status	 st;
	json_t		*msg = receipt();
	char		 err[256], *to, *v;
	const char	*p;

	(void)state;
	/* The token names the addr-spec of To, not its display name. */
	json_object_set_new(msg, "to", json_string("Ann <ann@example.net>"));
	m = message_build(NULL, NULL, ID, msg, u, "acme", &st, err,
	    sizeof(err));
	if (m == NULL)
		fail_msg("not built: %s", err);
	if ((p = strstr(m->data, "Message-ID: ")) == NULL ||
	    strncmp(p, head, sizeof(head) - 1) != 0)
		fail_msg("headers:\n%.900s", m->data);
	assert_wire_form(m);
	again = message_build(NULL, NULL, ID, msg, u, "acme", &st, err,
	    sizeof(err));
	assert_non_null(again);
	assert_int_equal(again->len, m->len);
	assert_memory_equal(again->data, m->data, m->len);
	message_free(again);
	message_free(m);
	/* Another client, or none: no link. */
	m = message_build(NULL, NULL, ID, msg, u, "other", &st, err,
	    sizeof(err));
	assert_non_null(m);
	assert_null(strstr(m->data, "List-Unsubscribe"));
	message_free(m);
	m = message_build(NULL, NULL, ID, msg, NULL, "acme", &st, err,
	    sizeof(err));
	assert_non_null(m);
	assert_null(strstr(m->data, "List-Unsubscribe"));
	message_free(m);
	/* The longest address: one line all the same, under 998. */
	assert_non_null(to = malloc(255));
	memset(to, 'a', 64);
	to[64] = '@';
	memset(to + 65, 'd', 189);
	to[100] = to[160] = to[220] = '.';
	to[254] = '\0';
	json_object_set_new(msg, "to", json_string(to));
	m = message_build(NULL, NULL, ID, msg, u, "acme", &st, err,
	    sizeof(err));
	if (m == NULL)
		fail_msg("not built: %s", err);
	assert_wire_form(m);
	v = header(m, "List-Unsubscribe");
	assert_true(strncmp(v, "<https://msg.example.com/unsubscribe/",
	    37) == 0 && v[strlen(v) - 1] == '>');
	assert_null(strchr(v, ' '));
	p = strstr(m->data, "List-Unsubscribe: ");
	assert_true(strstr(p, "\r\n") - p < 998);
	free(v);
	message_free(m);
	free(to);
	json_decref(msg);
	unsub_free(u);
}

/* An xn-- label that is not Punycode: refused, never rewritten. */
static void
test_invalid_idn_refused(void **state)
{
	struct message	*m;
	enum msg_status	 st;
	json_t		*msg = receipt();
	char		 err[256];

	(void)state;
	json_object_set_new(msg, "to", json_string("ann@acme.xn--example"));
	m = message_build(NULL, ID ".json", ID, msg, NULL, NULL, &st,
	    err, sizeof(err));
	assert_null(m);
	assert_int_equal(st, MSG_PERMFAIL);
	assert_non_null(strstr(err, "internationalized"));
	/* A valid one goes as it is. */
	json_object_set_new(msg, "to", json_string("ann@xn--bcher-kva.example"));
	m = message_build(NULL, ID ".json", ID, msg, NULL, NULL, &st,
	    err, sizeof(err));
	assert_non_null(m);
	assert_string_equal(m->recipient, "ann@xn--bcher-kva.example");
	assert_non_null(strstr(m->data, "To: ann@xn--bcher-kva.example\r\n"));
	message_free(m);
	json_decref(msg);
}

static void
test_parts(void **state)
{
	struct message	*m;
	json_t		*msg = receipt();
	const char	*alt, *text, *html, *pdf;

	(void)state;
	json_object_set_new(msg, "text", json_string("Total = 5\r\nsee "
	    "\xc3\xa9t\xc3\xa9\n"));
	m = build(msg);
	alt = strstr(m->data, "\r\n--=_mixed_" ID "\r\nContent-Type: "
	    "multipart/alternative;");
	text = strstr(m->data, "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Transfer-Encoding: quoted-printable\r\n\r\n"
	    "Total =3D 5\r\nsee =C3=A9t=C3=A9\r\n\r\n--");
	html = strstr(m->data, "Content-Type: text/html; charset=utf-8\r\n"
	    "Content-Transfer-Encoding: quoted-printable\r\n\r\n"
	    "<p>Total: 5 &amp; more</p>\r\n--");
	pdf = strstr(m->data, "\r\n--=_mixed_" ID "\r\n"
	    "Content-Type: application/pdf; name=r.pdf\r\n"
	    "Content-Disposition: attachment; filename=r.pdf\r\n"
	    "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n");
	/* The text (a CRLF of it is no "=0D"), the HTML, the attachment. */
	if (alt == NULL || text == NULL || html == NULL || pdf == NULL ||
	    !(alt < text && text < html && html < pdf))
		fail_msg("parts:\n%s", m->data);
	assert_non_null(strstr(m->data, "\r\n--=_alternative_" ID "--\r\n"));
	assert_int_equal(strcmp(m->data + m->len - strlen("--=_mixed_" ID
	    "--\r\n"), "--=_mixed_" ID "--\r\n"), 0);
	assert_wire_form(m);
	message_free(m);
	json_decref(msg);
}

/* Built twice, the same bytes: what the outbox shows is what is sent. */
static void
test_same_bytes(void **state)
{
	struct message	*a, *b;
	json_t		*msg = receipt();

	(void)state;
	a = build(msg);
	sleep(1);
	b = build(msg);
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data, a->len);
	message_free(a);
	message_free(b);
	json_decref(msg);
}

static void
test_addresses(void **state)
{
	static const struct {
		const char	*from;
		const char	*want;
	} t[] = {
		{ "a@example.com", "a@example.com" },
		{ "<a@example.com>", "a@example.com" },
		{ "Ann<a@example.com>", "Ann <a@example.com>" },
		/* A dot is no atom's: the phrase goes in quotes. */
		{ "Ann Q. Doe <a@example.com>",
		    "\"Ann Q. Doe\" <a@example.com>" },
		{ "\"Doe, Ann\" <a@example.com>",
		    "\"Doe, Ann\" <a@example.com>" },
		{ "\"say \\\"hi\\\"\" <a@example.com>",
		    "\"say \\\"hi\\\"\" <a@example.com>" },
		/* Only the display name is encoded, the address readable. */
		{ "Zo\xc3\xab <zoe@example.com>",
		    "=?UTF-8?b?Wm/Dqw==?= <zoe@example.com>" },
		/* Never an encoded word in quotes: unquoted, then encoded. */
		{ "\"Zo\xc3\xab, \\\"Z\\\"\" <zoe@example.com>",
		    "=?UTF-8?b?Wm/Dqyw=?= \"\\\"Z\\\"\" <zoe@example.com>" },
	};
	struct message	*m;
	json_t		*msg = receipt();
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		json_object_set_new(msg, "from", json_string(t[i].from));
		json_object_set_new(msg, "to", json_string(t[i].from));
		m = build(msg);
		HEADER_IS(m, "From", t[i].want);
		HEADER_IS(m, "To", t[i].want);
		/* The envelope: the bare addr-spec. */
		assert_string_equal(m->sender, strchr(m->sender, 'z') ?
		    "zoe@example.com" : "a@example.com");
		assert_string_equal(m->recipient, m->sender);
		assert_wire_form(m);
		message_free(m);
	}
	json_decref(msg);
}

static void
test_subject(void **state)
{
	struct message	*m;
	json_t		*msg = receipt();

	(void)state;
	json_object_set_new(msg, "subject", json_string("\xc3\xa9t\xc3\xa9"));
	m = build(msg);
	HEADER_IS(m, "Subject", "=?UTF-8?B?w6l0w6k=?=");
	message_free(m);
	json_object_del(msg, "subject");
	m = build(msg);
	HEADER_IS(m, "Subject", "");
	message_free(m);
	json_decref(msg);
}

/*
 * Defect 8 of issue 9: a subject of continuation bytes (not UTF-8) made
 * the old encoder loop for ever.  In a child under an alarm, so that a
 * loop fails the test instead of hanging the suite.
 */
static void
test_subject_not_utf8(void **state)
{
	static const size_t	 lens[] = { 45, 46, 90, 200 };
	struct message		*m;
	char			 v[256];
	json_t			*msg = receipt();
	size_t			 i;
	pid_t			 pid;
	int			 status;

	(void)state;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		v[0] = 'a';
		memset(v + 1, 0x80, lens[i]);
		v[lens[i] + 1] = '\0';
		json_object_set_new(msg, "subject", json_stringn_nocheck(v,
		    lens[i] + 1));
		if ((pid = fork()) == 0) {
			alarm(5);
			m = build(msg);
			assert_wire_form(m);
			_exit(0);
		}
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (WIFSIGNALED(status))
			fail_msg("%zu continuation bytes: killed by signal "
			    "%d (SIGALRM: it loops)", lens[i],
			    WTERMSIG(status));
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	json_decref(msg);
}

/* Attachment name as Content-Type name= and Content-Disposition. */
static void
test_attachment_names(void **state)
{
	struct message	*m;
	json_t		*msg = receipt(), *a;
	char		 name[256], *v, *line, *save, *p;
	size_t		 i;

	(void)state;
	a = json_array_get(json_object_get(msg, "attachments"), 0);
	/* Defect 11 of issue 9: never raw 8-bit, RFC 2231 instead. */
	json_object_set_new(a, "name", json_string("r\xc3\xa9sum\xc3\xa9 "
	    "1.pdf"));
	m = build(msg);
	assert_non_null(strstr(m->data, "Content-Disposition: attachment; "
	    "filename*=UTF-8''r%C3%A9sum%C3%A9%201.pdf\r\n"));
	/* The RFC 2047 fallback in name=, for programs without RFC 2231. */
	assert_non_null(strstr(m->data, "Content-Type: application/pdf; "
	    "name=\"=?UTF-8?b?csOpc3Vtw6k=?= 1.pdf\"\r\n"));
	assert_wire_form(m);
	message_free(m);
	/* A quote stays, quoted. */
	json_object_set_new(a, "name", json_string("say \"hi\".txt"));
	m = build(msg);
	assert_non_null(strstr(m->data, "Content-Disposition: attachment; "
	    "filename=\"say \\\"hi\\\".txt\"\r\n"));
	message_free(m);
	/* Long: continuations of lines of at most 78, no %XX cut. */
	for (i = 0; i < 120; i += 2)
		memcpy(name + i, "\xc3\xa9", 2);
	strcpy(name + 120, ".pdf");
	json_object_set_new(a, "name", json_string(name));
	m = build(msg);
	assert_non_null(strstr(m->data, "\tfilename*0*=UTF-8''%C3%A9"));
	assert_non_null(strstr(m->data, ";\r\n\tfilename*1*=%"));
	assert_null(strstr(m->data, "filename*="));
	assert_non_null(v = strdup(m->data));
	for (line = strtok_r(v, "\r\n", &save); line != NULL;
	    line = strtok_r(NULL, "\r\n", &save)) {
		if (strstr(line, "filename*") == NULL)
			continue;
		assert_true(strlen(line) <= 78);
		for (p = line; (p = strchr(p, '%')) != NULL; p++)
			assert_true(p[1] != '\0' && p[1] != ';' &&
			    p[2] != '\0' && p[2] != ';');
	}
	free(v);
	assert_wire_form(m);
	message_free(m);
	/* No type: application/octet-stream. */
	json_object_del(a, "contentType");
	json_object_set_new(a, "name", json_string("x.bin"));
	m = build(msg);
	assert_non_null(strstr(m->data, "Content-Type: application/octet-"
	    "stream; name=x.bin\r\n"));
	message_free(m);
	json_decref(msg);
}

/* What cannot be sent correctly is not built at all, for good. */
static void
test_refused(void **state)
{
	static const char *const bad[] = { "x> y <a@b.example>",
	    "j\xc3\xb6rg@example.de", "a@b.example, c@d.example", "" };
	struct message	*m;
	enum msg_status	 st;
	json_t		*msg = receipt(), *a;
	char		 err[256];
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object_set_new(msg, "from", json_string(bad[i]));
		err[0] = '\0';
		assert_null(message_build(NULL, NULL, ID, msg, NULL, NULL,
		    &st, err, sizeof(err)));
		assert_int_equal(st, MSG_PERMFAIL);
		assert_non_null(strstr(err, "address"));
		json_object_set_new(msg, "from", json_string("a@b.example"));
		json_object_set_new(msg, "to", json_string(bad[i]));
		assert_null(message_build(NULL, NULL, ID, msg, NULL, NULL,
		    &st, err, sizeof(err)));
		assert_int_equal(st, MSG_PERMFAIL);
		json_object_set_new(msg, "to", json_string("c@d.example"));
	}
	json_object_del(msg, "from");
	assert_null(message_build(NULL, NULL, ID, msg, NULL, NULL, &st,
	    err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	json_object_set_new(msg, "from", json_string("a@b.example"));
	assert_null(message_build(NULL, NULL, "not-an-id", msg, NULL, NULL,
	    &st, err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	/* An attachment stored apart and not read back: not sent without. */
	a = json_array_get(json_object_get(msg, "attachments"), 0);
	json_object_del(a, "content");
	json_object_set_new(a, "blob", json_integer(0));
	assert_null(message_build(NULL, NULL, ID, msg, NULL, NULL, &st,
	    err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	assert_non_null(strstr(err, "attachment 0"));
	/* Nor one without a name, nor content that is not base64. */
	json_object_set_new(a, "content", json_string("JVBERi0xLjQK"));
	json_object_del(a, "name");
	assert_null(message_build(NULL, NULL, ID, msg, NULL, NULL, &st,
	    err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	json_object_set_new(a, "name", json_string("r.pdf"));
	json_object_set_new(a, "content", json_string("*not base64*"));
	assert_null(message_build(NULL, NULL, ID, msg, NULL, NULL, &st,
	    err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	json_object_set_new(a, "content", json_string("JVBERi0xLjQK"));
	m = build(msg);
	message_free(m);
	message_free(NULL);
	json_decref(msg);
}

struct fixture {
	char		 dir[TU_DIR_SIZE];	/* first: see testutil.h */
	struct spool	*sp;
};

static int
setup_spool(void **state)
{
	struct fixture	*f;
	char		 root[128], err[256];

	if ((f = tu_fixture_new(sizeof(*f), "message")) == NULL)
		return -1;
	snprintf(root, sizeof(root), "%s/spool", f->dir);
	if ((f->sp = spool_open(root, 1, err, sizeof(err))) == NULL) {
		tu_fixture_free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int
teardown_spool(void **state)
{
	struct fixture	*f = *state;

	spool_free(f->sp);
	return tu_teardown(state);
}

/*
 * An attachment stored once (blobs/ID.0) is read back: the message is
 * the one its inline twin makes; a blob missing, or not of its size,
 * fails the message for good.
 */
static void
test_stored_attachment(void **state)
{
	static const unsigned char	 pdf[] = "%PDF-1.4\n";
	struct blob_data		 v = { pdf, sizeof(pdf) - 1 };
	const char			*ids[] = { ID };
	struct fixture			*f = *state;
	struct message			*inline_m, *m;
	enum msg_status			 st;
	json_t				*msg = receipt(), *a;
	char				 err[256];

	(void)state;
	inline_m = build(msg);
	assert_int_equal(blob_store(f->sp, &v, 1, ids, 1), MSG_OK);
	a = json_array_get(json_object_get(msg, "attachments"), 0);
	json_object_del(a, "content");
	json_object_set_new(a, "blob", json_integer(0));
	json_object_set_new(a, "size", json_integer(v.len));
	m = message_build(f->sp, ID ".json", ID, msg, NULL, NULL, &st,
	    err, sizeof(err));
	if (m == NULL)
		fail_msg("not built: %s", err);
	assert_int_equal(m->len, inline_m->len);
	assert_memory_equal(m->data, inline_m->data, m->len);
	message_free(m);
	/* Not of the size the document says. */
	json_object_set_new(a, "size", json_integer(v.len + 1));
	assert_null(message_build(f->sp, ID ".json", ID, msg, NULL, NULL,
	    &st, err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	/* Missing. */
	json_object_set_new(a, "blob", json_integer(1));
	json_object_del(a, "size");
	assert_null(message_build(f->sp, ID ".json", ID, msg, NULL, NULL,
	    &st, err, sizeof(err)));
	assert_int_equal(st, MSG_PERMFAIL);
	assert_non_null(strstr(err, "blobs/"));
	message_free(inline_m);
	json_decref(msg);
}

static int
gmime_up(void **state)
{
	(void)state;
	message_init();
	message_init();		/* once a process, whatever the calls */
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_invalid_idn_refused),
		cmocka_unit_test(test_list_unsubscribe),
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_same_bytes),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_subject),
		cmocka_unit_test(test_subject_not_utf8),
		cmocka_unit_test(test_attachment_names),
		cmocka_unit_test(test_refused),
		cmocka_unit_test_setup_teardown(test_stored_attachment,
		    setup_spool, teardown_spool),
	};

	return cmocka_run_group_tests(tests, gmime_up, NULL);
}
