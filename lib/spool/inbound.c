/*
 * inbound.c: inbound messages read from providers' bodies (inbound.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rfc3339.h"
#include "base/valid.h"
#include "spool/inbound.h"
#include "spool/inbox.h"
#include "spool/receipt.h"

/* Set e: the member at fault and why.  Returns NULL. */
static json_t *
fail(struct inbound_err *e, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static json_t *
fail(struct inbound_err *e, const char *path, const char *fmt, ...)
{
	va_list	ap;

	snprintf(e->path, sizeof(e->path), "%s", path);
	va_start(ap, fmt);
	vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
	return NULL;
}

/*
 * A string member that must be there: 1 to max bytes, no control
 * characters.  NULL with e set otherwise.
 */
static const char *
word(const json_t *o, const char *key, const char *path, size_t max,
    struct inbound_err *e)
{
	const char	*s = json_string_value(json_object_get(o, key));
	size_t		 i;

	if (s == NULL || *s == '\0') {
		fail(e, path, "missing: a string is required");
		return NULL;
	}
	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			fail(e, path, "holds a control character");
			return NULL;
		}
	if (i > max) {
		fail(e, path, "longer than %zu bytes", max);
		return NULL;
	}
	return s;
}

int
inbound_twilio_is(const json_t *form)
{
	return json_object_get(form, "MessageStatus") == NULL &&
	    json_object_get(form, "CallStatus") == NULL;
}

json_t *
inbound_twilio(const json_t *form, time_t now, struct inbound_err *e)
{
	const char	*sid, *from, *to, *n, *url;
	const char	*channel = "sms";
	char		 key[32];
	json_t		*media;
	long		 count = 0, i;

	if ((sid = word(form, "MessageSid", "MessageSid", INBOUND_ID_MAX,
	    e)) == NULL ||
	    (from = word(form, "From", "From", INBOUND_ADDR_MAX, e)) == NULL ||
	    (to = word(form, "To", "To", INBOUND_ADDR_MAX, e)) == NULL)
		return NULL;
	/* Twilio's WhatsApp numbers: the same webhook, another channel. */
	if (strncmp(from, "whatsapp:", 9) == 0) {
		channel = "ott";
		from += 9;
	}
	if (strncmp(to, "whatsapp:", 9) == 0)
		to += 9;
	if ((n = json_string_value(json_object_get(form, "NumMedia"))) !=
	    NULL) {
		if (strlen(n) > 2 || strspn(n, "0123456789") != strlen(n) ||
		    *n == '\0' || (count = atol(n)) > INBOUND_MEDIA_MAX)
			return fail(e, "NumMedia", "not a number from 0 to %d",
			    INBOUND_MEDIA_MAX);
	}
	if ((media = json_array()) == NULL)
		return fail(e, "", "out of memory");
	for (i = 0; i < count; i++) {
		snprintf(key, sizeof(key), "MediaUrl%ld", i);
		if ((url = json_string_value(json_object_get(form, key))) ==
		    NULL || valid_header(url, strlen(url)) != NULL ||
		    (strncmp(url, "https://", 8) != 0 &&
		    strncmp(url, "http://", 7) != 0)) {
			json_decref(media);
			return fail(e, key, "missing or not a URL, with "
			    "NumMedia %ld", count);
		}
		json_array_append_new(media, json_string(url));
	}
	return inbox_new(channel, "twilio", sid, from, to,
	    json_string_value(json_object_get(form, "Body")), "text", media,
	    now);
}

/* "+" and the digits of s (blanks, dashes and a "+" left out) into out. */
static int
e164_of(const char *s, char *out, size_t len)
{
	size_t	n = 0;

	if (s == NULL || len < 2)
		return -1;
	out[n++] = '+';
	for (; *s != '\0'; s++) {
		if (*s >= '0' && *s <= '9') {
			if (n + 1 >= len)
				return -1;
			out[n++] = *s;
		} else if (*s != ' ' && *s != '-' && *s != '+' &&
		    *s != '(' && *s != ')')
			return -1;
	}
	out[n] = '\0';
	return n >= 2 ? 0 : -1;
}

/*
 * The text of a WhatsApp message of type (NULL: none): text.body,
 * button.text, an interactive reply's title.  *bad set when the member
 * that should hold it is not a string.
 */
static const char *
wa_text(const json_t *msg, const char *type, int *bad)
{
	const json_t	*o, *r;
	const char	*which;

	*bad = 0;
	o = json_object_get(msg, type);
	if (strcmp(type, "text") == 0 || strcmp(type, "button") == 0) {
		which = strcmp(type, "text") == 0 ? "body" : "text";
		*bad = !json_is_string(json_object_get(o, which));
		return json_string_value(json_object_get(o, which));
	}
	if (strcmp(type, "interactive") == 0) {
		if ((r = json_object_get(o, "button_reply")) == NULL)
			r = json_object_get(o, "list_reply");
		return json_string_value(json_object_get(r, "title"));
	}
	return NULL;
}

json_t *
inbound_whatsapp(const json_t *value, const json_t *msg, const char *path,
    time_t now, struct inbound_err *e)
{
	const json_t	*meta = json_object_get(value, "metadata");
	const char	*id, *from, *type, *text, *mid;
	char		 p[192], to[INBOX_NUMBER_MAX + 8];
	json_t		*media;
	int		 bad;

	snprintf(p, sizeof(p), "%s.id", path);
	if ((id = word(msg, "id", p, INBOUND_ID_MAX, e)) == NULL)
		return NULL;
	snprintf(p, sizeof(p), "%s.from", path);
	if ((from = word(msg, "from", p, INBOUND_ADDR_MAX, e)) == NULL)
		return NULL;
	if (strspn(from, "0123456789") != strlen(from))
		return fail(e, p, "not a number of digits");
	snprintf(p, sizeof(p), "%s.type", path);
	if ((type = word(msg, "type", p, 32, e)) == NULL)
		return NULL;
	if (e164_of(json_string_value(json_object_get(meta,
	    "display_phone_number")), to, sizeof(to)) == -1)
		return fail(e, "metadata.display_phone_number", "missing or "
		    "not a phone number: the business number it was sent to");
	text = wa_text(msg, type, &bad);
	if (bad) {
		snprintf(p, sizeof(p), "%s.%s.%s", path, type,
		    strcmp(type, "text") == 0 ? "body" : "text");
		return fail(e, p, "missing: a %s message has its text here",
		    type);
	}
	if ((media = json_array()) == NULL)
		return fail(e, "", "out of memory");
	/* An image, a document …: the id to fetch it from the Graph API. */
	if ((mid = json_string_value(json_object_get(json_object_get(msg,
	    type), "id"))) != NULL)
		json_array_append_new(media, json_string(mid));
	return inbox_new("ott", "whatsapp", id, from, to, text, type, media,
	    receipt_meta_time(json_string_value(json_object_get(msg,
	    "timestamp")), now));
}

int
inbound_http_is(const json_t *body)
{
	const char	*type = json_string_value(json_object_get(body, "type"));

	return type != NULL && strcmp(type, "inbound") == 0;
}

json_t *
inbound_http(const json_t *body, const char *channel, time_t now,
    struct inbound_err *e)
{
	const json_t	*v;
	const char	*from, *to, *id = NULL, *at;
	time_t		 when = now;

	if ((from = word(body, "from", "from", INBOUND_ADDR_MAX, e)) ==
	    NULL || (to = word(body, "to", "to", INBOUND_ADDR_MAX, e)) == NULL)
		return NULL;
	if (!json_is_string(json_object_get(body, "text")))
		return fail(e, "text", "missing: a string is required");
	if ((v = json_object_get(body, "id")) != NULL && !json_is_null(v) &&
	    (id = word(body, "id", "id", INBOUND_ID_MAX, e)) == NULL)
		return NULL;
	if ((v = json_object_get(body, "at")) != NULL && !json_is_null(v) &&
	    ((at = json_string_value(v)) == NULL ||
	    rfc3339_parse(at, &when) == -1))
		return fail(e, "at", "not an RFC 3339 time");
	return inbox_new(channel, "http", id, from, to,
	    json_string_value(json_object_get(body, "text")), "text", NULL,
	    when);
}
