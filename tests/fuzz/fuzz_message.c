/*
 * fuzz_message: the email as msgspool writes it.  The first byte
 * chooses: bit 0 clear, mime_address_parse (lib/base/mime.c) of the rest, the
 * parser of From and To; bit 0 set, message_build (spooler/providers/message.c,
 * on GMime) of the rest as the JSON message of a spool document, with
 * its attachments inline.
 *
 * An address taken must have an ASCII addr-spec with an '@' that
 * mime_addr_spec_check takes, inside the input, after the display name.
 * A message built must be a well-formed RFC 5322 one (fuzz_check_message)
 * and the same bytes when built again (message.h); its sender and
 * recipient are the addr-specs of From and To.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mime.h"
#include "fuzzutil.h"
#include "providers/message.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ID	"01J0000000000000000000FVZZ"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	message_init();
	return 0;
}

static void
address(const char *s, size_t len)
{
	struct mime_address	 a;
	size_t			 i;

	if (mime_address_parse(s, len, &a) != NULL)
		return;
	if (a.addr < s || a.addrlen == 0 || a.addr + a.addrlen > s + len)
		fuzz_fail("the addr-spec is not in the input");
	if (a.name != NULL && (a.name < s || a.name + a.namelen > a.addr))
		fuzz_fail("the display name is not before the addr-spec");
	for (i = 0; i < a.addrlen; i++)
		if ((unsigned char)a.addr[i] >= 0x80 || a.addr[i] <= ' ')
			fuzz_fail("addr-spec '%.*s' taken", (int)a.addrlen,
			    a.addr);
	if (memchr(a.addr, '@', a.addrlen) == NULL)
		fuzz_fail("addr-spec '%.*s' without '@'", (int)a.addrlen,
		    a.addr);
	if (mime_addr_spec_check(a.addr, a.addrlen) != NULL)
		fuzz_fail("addr-spec '%.*s' taken, mime_addr_spec_check "
		    "refuses it", (int)a.addrlen, a.addr);
}

/* The addr-spec of a message's address member, malloc'd. */
static char *
addr_of(const json_t *msg, const char *key)
{
	struct mime_address	 a;
	const char		*s = json_string_value(json_object_get(msg,
				    key));

	if (s == NULL || mime_address_parse(s, strlen(s), &a) != NULL)
		fuzz_fail("message built with a bad %s", key);
	return strndup(a.addr, a.addrlen);
}

static void
message(const char *text, size_t len)
{
	struct message	*m, *again;
	enum msg_status	 st;
	json_t		*msg;
	char		 err[256], *from, *to;

	if ((msg = json_loadb(text, len, JSON_ALLOW_NUL, NULL)) == NULL)
		return;
	m = message_build(NULL, ID ".json", ID, msg, NULL, NULL, &st, err,
	    sizeof(err));
	if (m == NULL) {
		if (st != MSG_PERMFAIL)
			fuzz_fail("message_build: %s without a spool", err);
		json_decref(msg);
		return;
	}
	if (m->data[m->len] != '\0')
		fuzz_fail("message not NUL-terminated");
	fuzz_check_message(msg, m->data, m->len);
	from = addr_of(msg, "from");
	to = addr_of(msg, "to");
	if (strcmp(m->sender, from) != 0 || strcmp(m->recipient, to) != 0)
		fuzz_fail("sender '%s', recipient '%s', not '%s', '%s'",
		    m->sender, m->recipient, from, to);
	again = message_build(NULL, ID ".json", ID, msg, NULL, NULL, &st,
	    err, sizeof(err));
	if (again == NULL || again->len != m->len ||
	    memcmp(again->data, m->data, m->len) != 0)
		fuzz_fail("built twice, two messages");
	free(from);
	free(to);
	message_free(again);
	message_free(m);
	json_decref(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		message((const char *)data + 1, size - 1);
	else
		address((const char *)data + 1, size - 1);
	return 0;
}
