/*
 * msgdoc_receipt.c: what receipts change in the spool document
 * (msgdoc.h; msgspool-spool(5), Receipts): the parts of a message sent
 * in several, whose receipts may speak of a message, the receipt
 * documents of receipts/, and a receipt applied.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/channel.h"
#include "base/rfc3339.h"
#include "base/util.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"

const char *
msgdoc_provider_part(const json_t *doc, size_t i)
{
	json_t	*parts;

	parts = json_object_get(json_object_get(doc, "providerReply"),
	    "partIds");
	if (!json_is_array(parts))
		return i == 0 ? msgdoc_provider_id(doc) : NULL;
	return json_string_value(json_array_get(parts, i));
}

const char *
msgdoc_part_receipt(json_t *doc, const char *pmid, const char *status,
    int *changed)
{
	json_t		*parts, *st, *v;
	const char	*p;
	size_t		 i, n, delivered = 0;
	int		 ours = 0;

	*changed = 0;
	parts = json_object_get(json_object_get(doc, "providerReply"),
	    "partIds");
	if (pmid == NULL || !json_is_array(parts) ||
	    (n = json_array_size(parts)) < 2)
		return status;
	json_array_foreach(parts, i, v)
		if ((p = json_string_value(v)) != NULL && strcmp(p, pmid) == 0)
			ours = 1;
	if (!ours)
		return status;
	if (!json_is_object(st = json_object_get(doc, "partStatus"))) {
		json_object_set_new(doc, "partStatus", json_object());
		st = json_object_get(doc, "partStatus");
	}
	p = json_string_value(json_object_get(st, pmid));
	if (p == NULL || strcmp(p, status) != 0) {
		json_object_set_new(st, pmid, json_string(status));
		*changed = 1;
	}
	if (strcmp(status, "undelivered") == 0)
		return status;
	json_array_foreach(parts, i, v)
		if ((p = json_string_value(json_object_get(st,
		    json_string_value(v)))) != NULL &&
		    strcmp(p, "delivered") == 0)
			delivered++;
	return strcmp(status, "delivered") == 0 && delivered == n ? status :
	    NULL;
}

/*
 * Whose messages a receipt speaks of: its source, a provider that sent
 * them, their channels (SCOPE_*).  A bounce is an MTA's word on email,
 * smtp's or one the file provider wrote for an MTA.
 */
static const struct {
	const char	*source;
	const char	*provider;
	unsigned	 channels;
} speaks[] = {
	{ "twilio", "twilio", SCOPE_SMS | SCOPE_VOICE },
	{ "whatsapp", "whatsapp", SCOPE_OTT },
	{ "http", "http", SCOPE_SMS | SCOPE_VOICE | SCOPE_OTT },
	{ "smpp", "smpp", SCOPE_SMS },
	{ "email", "smtp", SCOPE_EMAIL },
	{ "email", "file", SCOPE_EMAIL },
	{ "test", "test", SCOPE_ALL },
};

int
msgdoc_receipt_applies(const json_t *doc, const char *state,
    const char *source, const char *status, char *why, size_t whylen)
{
	const char	*chan = msgdoc_channel(doc), *prov;
	unsigned	 bit;
	size_t		 i;
	int		 c, sent = strcmp(state, "sent") == 0, theirs = 0;
	int		 served = 0;

	prov = msgdoc_provider(doc);
	c = chan != NULL ? channel_parse(chan) : -1;
	bit = c != -1 ? channel_info((enum channel)c)->scope : 0;
	for (i = 0; i < sizeof(speaks) / sizeof(speaks[0]) && !served; i++) {
		/* Sent: by the provider of the attempt that sent it. */
		if (source == NULL || strcmp(speaks[i].source, source) != 0 ||
		    (sent && (prov == NULL ||
		    strcmp(prov, speaks[i].provider) != 0)))
			continue;
		theirs = 1;
		served = (speaks[i].channels & bit) != 0;
	}
	if (sent && !theirs)
		util_seterr(why, whylen, "the message was sent by %s, not %s",
		    prov ? prov : "no provider it records", source ? source :
		    "an unnamed source");
	else if (!served)
		util_seterr(why, whylen, "%s receipts are not for %s messages",
		    source ? source : "unnamed", c != -1 ? chan : "such");
	else if (status != NULL && strcmp(status, "read") == 0 &&
	    bit != SCOPE_OTT)
		util_seterr(why, whylen, "read is for ott messages, not %s",
		    chan);
	else
		return 1;
	return 0;
}

json_t *
msgdoc_receipt_new(const char *rid, const char *provider, const char *msgid,
    const char *pmid, const char *status, const char *theirs, time_t at,
    json_t *error)
{
	char	when[RFC3339_LEN], now[RFC3339_LEN];

	rfc3339_format(at, when, sizeof(when));
	rfc3339_format(time(NULL), now, sizeof(now));
	return json_pack("{s:i, s:s, s:s, s:s?, s:s?, s:s, s:s?, s:s, s:s, "
	    "s:o}", "version", MSGDOC_VERSION, "id", rid, "provider", provider,
	    "message", msgid, "providerMessageId", pmid, "status", status,
	    "providerStatus", theirs, "at", when, "received", now, "error",
	    error ? error : json_null());
}

/*
 * A provider's error as the status object gives it: {"code": a string,
 * an integer or null, "message": a string}, whatever the provider sent.
 */
static json_t *
error_object(const json_t *e, const char *status)
{
	json_t	*code = json_object_get(e, "code");
	json_t	*msg = json_object_get(e, "message");

	if (!json_is_string(msg))
		msg = json_object_get(e, "title");
	return json_pack("{s:o, s:s}", "code", json_is_string(code) ||
	    json_is_integer(code) ? json_incref(code) : json_null(),
	    "message", json_is_string(msg) ? json_string_value(msg) : status);
}

int
msgdoc_receipt(json_t *doc, const char *state, const char *status,
    time_t at, const json_t *error)
{
	const char	*current;
	json_t		*ev;
	size_t		 i;

	/* Providers say things twice: once is enough. */
	json_array_foreach(json_object_get(doc, "events"), i, ev) {
		const char *s = json_string_value(json_object_get(ev,
		    "status"));
		const char *src = json_string_value(json_object_get(ev,
		    "source"));

		if (s != NULL && src != NULL && strcmp(s, status) == 0 &&
		    strcmp(src, "receipt") == 0)
			return 0;
	}
	current = msgdoc_status(doc, state);
	if (receipt_moves(current, status)) {
		json_object_set_new(doc, "receiptStatus", json_string(status));
		if (error != NULL && !json_is_null(error))
			json_object_set_new(doc, "receiptError",
			    error_object(error, status));
	}
	/* Kept as an event even when it moves nothing. */
	msgdoc_event(doc, status, at, "receipt");
	return 1;
}
