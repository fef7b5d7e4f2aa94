/*
 * event.c: webhook events to clients, their configuration and their
 * document (event.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/buf.h"
#include "base/mime.h"
#include "base/rfc3339.h"
#include "base/ulid.h"
#include "base/util.h"
#include "base/valid.h"
#include "spool/event.h"

#define SECTION_PREFIX	"client."

/*
 * The statuses an event may be of (msgdoc_status's final ones and sent),
 * and an inbound message's "received".
 */
static const char *const types[] = { "sent", "delivered", "read",
    "undelivered", "failed", "canceled", "received" };

const char *
event_section_client(const char *section)
{
	const char	*id;

	if (section == NULL || strncmp(section, SECTION_PREFIX,
	    strlen(SECTION_PREFIX)) != 0)
		return NULL;
	id = section + strlen(SECTION_PREFIX);
	return valid_client_id(id) ? id : NULL;
}

/* Whether a list "a,b, c" names word. */
static int
list_has(const char *list, const char *word)
{
	const char	*p = list;
	size_t		 n, wl = strlen(word);

	while (*p != '\0') {
		p += strspn(p, ", \t");
		n = strcspn(p, ", \t");
		if (n == wl && strncmp(p, word, n) == 0)
			return 1;
		p += n;
	}
	return 0;
}

int
event_filter_has(const char *filter, const char *status)
{
	return list_has(filter ? filter : EVENT_TYPES_DEFAULT, status);
}

int
event_secret_valid(const char *secret)
{
	unsigned char	*key;
	size_t		 len;

	/* The rule is config's, which checks every secret it reads. */
	if ((key = config_whsec_key(secret, &len)) == NULL)
		return 0;
	free(key);
	return 1;
}

char *
event_secret_new(void)
{
	unsigned char	 r[EVENT_SECRET_BYTES];
	char		*b, *s;
	size_t		 got = 0;
	ssize_t		 n;

	while (got < sizeof(r)) {
		if ((n = getrandom(r + got, sizeof(r) - got, 0)) == -1) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		got += (size_t)n;
	}
	if ((b = mime_base64_encode(r, sizeof(r))) == NULL)
		return NULL;
	if ((s = malloc(strlen(b) + 7)) != NULL) {
		memcpy(s, "whsec_", 6);
		memcpy(s + 6, b, strlen(b) + 1);
	}
	free(b);
	return s;
}

int
event_check_section(const struct config *cfg, const char *section,
    char *err, size_t errlen)
{
	const char	*url, *filter, *p;
	char		*secret, serr[512];
	size_t		 n, i;
	int		 known;

	if (event_section_client(section) == NULL) {
		util_seterr(err, errlen, "[%s]: not a valid client id",
		    section);
		return -1;
	}
	if ((filter = config_get(cfg, section, "webhook-events")) != NULL) {
		for (p = filter; *p != '\0'; p += n) {
			p += strspn(p, ", \t");
			if ((n = strcspn(p, ", \t")) == 0)
				break;
			for (known = 0, i = 0; i < sizeof(types) /
			    sizeof(types[0]); i++)
				known |= strlen(types[i]) == n &&
				    strncmp(p, types[i], n) == 0;
			if (!known) {
				util_seterr(err, errlen, "[%s]: webhook-events: "
				    "unknown status '%.*s' (%s)", section,
				    (int)n, p, EVENT_TYPES_DEFAULT);
				return -1;
			}
		}
	}
	if ((url = config_get(cfg, section, "webhook-url")) == NULL)
		return 0;
	if ((strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8)
	    != 0) || url[strcspn(url, " \t\r\n")] != '\0') {
		util_seterr(err, errlen, "[%s]: webhook-url: not an http or "
		    "https URL", section);
		return -1;
	}
	/* config_secret checks it is "whsec_" and base64 of enough bytes. */
	if ((secret = config_secret(cfg, section, "webhook-secret", serr,
	    sizeof(serr))) == NULL) {
		util_seterr(err, errlen, "%s", serr);
		return -1;
	}
	free(secret);
	return 0;
}

/* Whether client has a webhook-url and wants events of status. */
static int
wanted(const struct config *cfg, const char *client, const char *status)
{
	char	section[128];

	if (cfg == NULL || client == NULL)
		return 0;
	snprintf(section, sizeof(section), "%s%s", SECTION_PREFIX, client);
	return event_section_client(section) != NULL &&
	    config_get(cfg, section, "webhook-url") != NULL &&
	    event_filter_has(config_get(cfg, section, "webhook-events"),
	    status);
}

/* A new event "message.STATUS" of client with data (stolen), due now. */
static json_t *
event_new(const char *client, const char *status, json_t *data,
    time_t now)
{
	char	 id[ULID_LEN + 1], stamp[RFC3339_LEN], type[64];

	if (data == NULL || ulid_new(id) == -1) {
		json_decref(data);
		return NULL;
	}
	rfc3339_format(now, stamp, sizeof(stamp));
	snprintf(type, sizeof(type), "message.%s", status);
	return json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:i, s:s, s:n}",
	    "version", MSGDOC_VERSION, "id", id, "client", client,
	    "type", type, "timestamp", stamp, "data", data,
	    "attempts", 0, "nextAttempt", stamp, "lastError");
}

json_t *
event_of(const struct config *cfg, const json_t *doc, const char *state,
    time_t now)
{
	const char	*client = msgdoc_client(doc), *status;

	status = msgdoc_status(doc, state);
	if (!wanted(cfg, client, status))
		return NULL;
	return event_new(client, status, msgdoc_status_object(doc, state, 0),
	    now);
}

enum msg_status
event_record(struct spool *spool, const struct config *cfg,
    const json_t *doc, const char *state, time_t now, char *made)
{
	enum msg_status	 st;
	json_t		*ev;

	if (made != NULL)
		made[0] = '\0';
	if ((ev = event_of(cfg, doc, state, now)) == NULL)
		return MSG_OK;
	st = spool_area_store(spool, EVENT_AREA, (const json_t **)&ev, 1);
	if (st == MSG_OK && made != NULL)
		snprintf(made, SPOOL_NAME_MAX, "%s.json", event_id(ev));
	json_decref(ev);
	return st;
}

enum msg_status
event_record_received(struct spool *spool, const struct config *cfg,
    const char *client, const json_t *data, time_t now)
{
	enum msg_status	 st;
	json_t		*ev;

	if (!wanted(cfg, client, "received"))
		return MSG_OK;
	if ((ev = event_new(client, "received", json_deep_copy(data), now)) ==
	    NULL)
		return MSG_TEMPFAIL;
	st = spool_area_store(spool, EVENT_AREA, (const json_t **)&ev, 1);
	json_decref(ev);
	return st;
}

const char *
event_id(const json_t *ev)
{
	return json_string_value(json_object_get(ev, "id"));
}

const char *
event_client(const json_t *ev)
{
	return json_string_value(json_object_get(ev, "client"));
}

const char *
event_type(const json_t *ev)
{
	return json_string_value(json_object_get(ev, "type"));
}

const char *
event_last_error(const json_t *ev)
{
	return json_string_value(json_object_get(ev, "lastError"));
}

long long
event_attempts(const json_t *ev)
{
	return (long long)json_integer_value(json_object_get(ev, "attempts"));
}

time_t
event_due(const json_t *ev)
{
	const char	*next;
	time_t		 t;

	next = json_string_value(json_object_get(ev, "nextAttempt"));
	if (next == NULL || rfc3339_parse(next, &t) == -1)
		return time(NULL);
	return t;
}

char *
event_body(const json_t *ev)
{
	json_t	*body;
	char	*s;

	body = json_pack("{s:O, s:O, s:O}", "type", json_object_get(ev,
	    "type"), "timestamp", json_object_get(ev, "timestamp"), "data",
	    json_object_get(ev, "data"));
	if (body == NULL)
		return NULL;
	s = buf_json_text(body, JSON_COMPACT, NULL);
	json_decref(body);
	return s;
}

void
event_failed(json_t *ev, const char *why, time_t next)
{
	char	stamp[RFC3339_LEN];

	json_object_set_new(ev, "attempts", json_integer(
	    event_attempts(ev) + 1));
	json_object_set_new(ev, "lastError", json_string(why));
	if (next > 0) {
		rfc3339_format(next, stamp, sizeof(stamp));
		json_object_set_new(ev, "nextAttempt", json_string(stamp));
	} else
		json_object_set_new(ev, "nextAttempt", json_null());
}

void
event_resend(json_t *ev, time_t now)
{
	char	stamp[RFC3339_LEN];

	rfc3339_format(now, stamp, sizeof(stamp));
	json_object_set_new(ev, "attempts", json_integer(0));
	json_object_set_new(ev, "nextAttempt", json_string(stamp));
}
