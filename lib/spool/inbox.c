/*
 * inbox.c: inbound messages, their document, their owner and their
 * place in the spool (inbox.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/rfc3339.h"
#include "base/ulid.h"
#include "base/util.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"
#include "spool/spool.h"

/* The members of the inbound object, in the order a client gets them. */
static const char *const object_keys[] = { "id", "direction", "channel",
    "from", "to", "text", "type", "receivedAt", "provider",
    "providerMessageId", "media" };

json_t *
inbox_new(const char *channel, const char *provider, const char *pmid,
    const char *from, const char *to, const char *text, const char *type,
    json_t *media, time_t at)
{
	char	 id[ULID_LEN + 1], when[RFC3339_LEN];

	if (media == NULL && (media = json_array()) == NULL)
		return NULL;
	if (ulid_new(id) == -1) {
		json_decref(media);
		return NULL;
	}
	rfc3339_format(at, when, sizeof(when));
	return json_pack("{s:i, s:s, s:s, s:n, s:s, s:s, s:s, s:s?, s:s, "
	    "s:s, s:s, s:s?, s:o}", "version", MSGDOC_VERSION, "id", id,
	    "direction", "inbound", "client", "channel", channel, "from", from,
	    "to", to, "text", text, "type", type, "receivedAt", when,
	    "provider", provider, "providerMessageId", pmid, "media", media);
}

const char *
inbox_client(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "client"));
}

const char *
inbox_from(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "from"));
}

const char *
inbox_to(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "to"));
}

const char *
inbox_text(const json_t *doc)
{
	return json_string_value(json_object_get(doc, "text"));
}

/*
 * The next number of an inbound list from *p on (blanks and commas
 * between them): its start, its length in *len, *p past it; NULL at the
 * end.
 */
static const char *
next_number(const char **p, size_t *len)
{
	const char	*s;

	*p += strspn(*p, ", \t");
	if (**p == '\0')
		return NULL;
	s = *p;
	*len = strcspn(s, ", \t");
	*p += *len;
	return s;
}

/* Whether s[0..len) is "+" and 8 to 15 digits, or 3 to 8 digits. */
static int
number_valid(const char *s, size_t len)
{
	size_t	digits = len > 0 && s[0] == '+' ? len - 1 : len;
	size_t	i;

	for (i = len - digits; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return s[0] == '+' ? digits >= 8 && digits <= 15 :
	    digits >= 3 && digits <= 8;
}

/* The client of a section that lists number, or NULL. */
static const char *
lister(const struct config *cfg, const char *number, const char *except)
{
	const char	*sec, *list, *n, *p, *client;
	size_t		 i, len;

	for (i = 0; (sec = config_section(cfg, i)) != NULL; i++) {
		if ((client = event_section_client(sec)) == NULL ||
		    (except != NULL && strcmp(client, except) == 0) ||
		    (list = config_get(cfg, sec, "inbound")) == NULL)
			continue;
		for (p = list; (n = next_number(&p, &len)) != NULL; )
			if (len == strlen(number) && strncmp(n, number, len) ==
			    0)
				return client;
	}
	return NULL;
}

const char *
inbox_owner(const struct config *cfg, const char *to)
{
	if (cfg == NULL || to == NULL || *to == '\0')
		return NULL;
	return lister(cfg, to, NULL);
}

int
inbox_set_owner(json_t *doc, const struct config *cfg)
{
	const char	*client = inbox_owner(cfg, inbox_to(doc));

	json_object_set_new(doc, "client", client ? json_string(client) :
	    json_null());
	return client != NULL;
}

int
inbox_check_section(const struct config *cfg, const char *section,
    char *err, size_t errlen)
{
	const char	*list, *n, *p, *client, *other;
	char		 number[INBOX_NUMBER_MAX + 1];
	size_t		 len;

	if ((client = event_section_client(section)) == NULL ||
	    (list = config_get(cfg, section, "inbound")) == NULL)
		return 0;
	for (p = list; (n = next_number(&p, &len)) != NULL; ) {
		if (len > INBOX_NUMBER_MAX || !number_valid(n, len)) {
			util_seterr(err, errlen, "[%s] inbound: '%.*s' is not "
			    "a number (\"+\" and 8 to 15 digits, or a short "
			    "code of 3 to 8 digits)", section, (int)len, n);
			return -1;
		}
		memcpy(number, n, len);
		number[len] = '\0';
		if ((other = lister(cfg, number, client)) != NULL) {
			util_seterr(err, errlen, "[%s] inbound: %s is "
			    "[client.%s]'s too: a number has one client",
			    section, number, other);
			return -1;
		}
	}
	return 0;
}

/* Write doc into area, durably: MSG_OK or the store's status. */
static enum msg_status
store(struct spool *s, const char *area, const json_t *doc)
{
	return spool_area_store(s, area, &doc, 1);
}

enum msg_status
inbox_keep(struct spool *s, json_t *doc, const char *key, int *dup)
{
	const char	*prov, *pmid;
	char		 name[SPOOL_NAME_MAX], had[SPOOL_ID_LEN + 1], k[41];
	char		 err[256], in[64];
	json_t		*old, *note;
	enum msg_status	 st;
	int		 r;

	*dup = 0;
	prov = json_string_value(json_object_get(doc, "provider"));
	pmid = json_string_value(json_object_get(doc, "providerMessageId"));
	if (key == NULL && prov != NULL && pmid != NULL && *pmid != '\0') {
		/* Not the key of an outbound message of that provider. */
		snprintf(in, sizeof(in), "inbound-%s", prov);
		receipt_index_key(in, pmid, k);
		key = k;
	}
	if (key != NULL) {
		if ((r = spool_index_add(s, key, msgdoc_id(doc), had)) == -1)
			return spool_errno_status(errno);
		if (r == 1) {
			json_object_set_new(doc, "id", json_string(had));
			if ((old = inbox_load(s, had, err, sizeof(err))) !=
			    NULL) {
				json_decref(old);
				*dup = 1;
				return MSG_OK;
			}
			/* Its first delivery died before it kept it (or
			 * still writes it): keep it under that id. */
			if (errno != ENOENT)
				return MSG_TEMPFAIL;
		}
	}
	/* Its client's list first (list.h): a kill at any point never
	 * leaves a message kept but unlisted. */
	if (list_note_inbound(s, doc) == -1) {
		log_err("inbox: %s: the list of its client: %s",
		    msgdoc_id(doc), strerror(errno));
		return spool_errno_status(errno);
	}
	if ((note = json_pack("{s:i, s:s}", "version", MSGDOC_VERSION, "id",
	    msgdoc_id(doc))) == NULL)
		return MSG_TEMPFAIL;
	if ((st = store(s, INBOX_NEW_AREA, note)) == MSG_OK &&
	    (st = store(s, INBOX_AREA, doc)) != MSG_OK) {
		snprintf(name, sizeof(name), "%s.json", msgdoc_id(doc));
		spool_area_remove(s, INBOX_NEW_AREA, name);
	}
	json_decref(note);
	return st;
}

json_t *
inbox_load(struct spool *s, const char *id, char *err, size_t errlen)
{
	char	name[SPOOL_NAME_MAX];
	json_t	*doc;
	int	e;

	if (!ulid_valid(id)) {
		util_seterr(err, errlen, "%s: not an id", id);
		errno = ENOENT;
		return NULL;
	}
	snprintf(name, sizeof(name), "%s.json", id);
	doc = spool_area_load(s, INBOX_AREA, name, err, errlen);
	e = errno;
	if (doc != NULL && !json_is_string(json_object_get(doc, "from"))) {
		util_seterr(err, errlen, "inbox/%s: not an inbound message",
		    name);
		json_decref(doc);
		doc = NULL;
		e = EINVAL;
	}
	errno = e;
	return doc;
}

json_t *
inbox_object(const json_t *doc)
{
	json_t	*o, *v;
	size_t	 i;

	if ((o = json_object()) == NULL)
		return NULL;
	for (i = 0; i < sizeof(object_keys) / sizeof(object_keys[0]); i++) {
		v = json_object_get(doc, object_keys[i]);
		if (json_object_set(o, object_keys[i], v ? v : json_null()) ==
		    -1) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
