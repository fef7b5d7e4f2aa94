/*
 * smpp_inbound.c: SMS from phones, mobile-originated deliver_sm (smpp.h;
 * msgspoold(8), Inbound messages).  source_addr is whom it is from,
 * destination_addr the number it was sent to (E.164 with its "+" when
 * of international type or of 8 to 15 digits), the text decoded by its
 * data_coding (gsm.h).  A message in one part is kept in inbox/ at once.
 * A part of a longer one (a UDH with IEI 0x00 or 0x08, or the sar_ TLVs)
 * is kept in inbox-parts/ first, so that parts survive a restart, and
 * the message once every part has come, its parts in order whatever the
 * order they came in; the parts of one that never completes are kept as
 * they are after a while (smpp_parts_join).  Nothing is answered ESME_ROK
 * before it is on disk.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/mime.h"
#include "base/rfc3339.h"
#include "base/ulid.h"
#include "smpp/gsm.h"
#include "smpp/provider_smpp.h"
#include "smpp/smpp.h"
#include "spool/inbox.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"

#define PARTS_AREA	"inbox-parts"
#define ADDR_MAX	24	/* "+" and 20 octets, and the NUL */

/* Where a message's part stands in it (TS 23.040 9.2.3.24.1, .8). */
struct concat {
	unsigned	ref, total, seq;
	int		present;
};

/*
 * An address as kept: a number of international type (TON 1) or of 8 to
 * 15 digits gets its "+" (E.164), anything else (a short code, a name,
 * which may hold blanks) stays as it came.  0, or -1 when it is empty,
 * blank or not printable ASCII.
 */
static int
address(const uint8_t *a, uint8_t ton, char *out, size_t len)
{
	size_t	n = strnlen((const char *)a, 21), digits, i;

	for (i = 0; i < n; i++)
		if (a[i] < 0x20 || a[i] > 0x7e)
			return -1;
	if (n == 0 || a[0] == ' ' || n + 2 > len)
		return -1;
	digits = strspn((const char *)a, "0123456789");
	snprintf(out, len, "%s%.*s", digits == n && (ton == 1 ||
	    (n >= 8 && n <= 15)) ? "+" : "", (int)n, (const char *)a);
	return 0;
}

/*
 * The concatenation header of a UDH (sm[0] its length): into c, and in
 * *skip the octets the UDH takes.  0, or -1 when the UDH does not fit.
 */
static int
udh_parse(const uint8_t *sm, size_t len, struct concat *c, size_t *skip)
{
	size_t	udhl, i, iel;

	if (len < 1 || (udhl = sm[0]) + 1 > len)
		return -1;
	*skip = udhl + 1;
	for (i = 1; i + 2 <= udhl + 1; i += 2 + iel) {
		iel = sm[i + 1];
		if (i + 2 + iel > udhl + 1)
			return -1;
		if (sm[i] == 0x00 && iel == 3) {
			c->ref = sm[i + 2];
			c->total = sm[i + 3];
			c->seq = sm[i + 4];
			c->present = 1;
		} else if (sm[i] == 0x08 && iel == 4) {
			c->ref = (unsigned)sm[i + 2] << 8 | sm[i + 3];
			c->total = sm[i + 4];
			c->seq = sm[i + 5];
			c->present = 1;
		}
	}
	return 0;
}

/* The sar_ TLVs of a deliver_sm (SMPP 3.4, 5.3.2.22-24), into c. */
static void
sar_parse(const deliver_sm_t *d, struct concat *c)
{
	const tlv_t	*t;
	int		 got = 0;

	smpp34_tlv_for_each(t, d->tlv) {
		if (t->tag == TLVID_sar_msg_ref_num) {
			c->ref = t->value.val16;
			got |= 1;
		} else if (t->tag == TLVID_sar_total_segments) {
			c->total = t->value.val08;
			got |= 2;
		} else if (t->tag == TLVID_sar_segment_seqnum) {
			c->seq = t->value.val08;
			got |= 4;
		}
	}
	c->present = got == 7;
}

/* The short message, or the message_payload when it is empty. */
static void
payload(const deliver_sm_t *d, const uint8_t **sm, size_t *len)
{
	const tlv_t	*t;

	*sm = d->short_message;
	*len = d->sm_length;
	smpp34_tlv_for_each(t, d->tlv)
		if (t->tag == TLVID_message_payload && *len == 0) {
			*sm = t->value.octet;
			*len = t->length;
		}
}

/* A new inbound document of octets in coding (a binary one: no text). */
static json_t *
inbound_doc(const char *from, const char *to, uint8_t coding,
    const uint8_t *octets, size_t len, time_t at)
{
	json_t	*doc;
	char	*text = NULL;
	int	 r;

	if ((r = gsm_decode(coding, octets, len, &text)) == -1)
		return NULL;
	doc = inbox_new("sms", "smpp", NULL, from, to, text, r == 1 ?
	    "binary" : "text", NULL, at);
	free(text);
	return doc;
}

/*
 * Keep doc (its client given), under key when not NULL.  ESME_ROK, or
 * ESME_RX_T_APPN (logged) when the spool cannot take it now.
 */
static uint32_t
keep(struct smpp *st, json_t *doc, const char *key)
{
	int	dup;

	inbox_set_owner(doc, st->cfg);
	if (inbox_keep(st->spool, doc, key, &dup) != MSG_OK) {
		log_err("[%s] smpp: cannot keep the message from %s; the SMSC "
		    "is asked to send it again", st->section, inbox_from(doc));
		return ESME_RX_T_APPN;
	}
	return ESME_ROK;
}

/* A part kept in inbox-parts/: ESME_ROK, or ESME_RX_T_APPN. */
static uint32_t
keep_part(struct smpp *st, const char *from, const char *to,
    const struct concat *c, uint8_t coding, const uint8_t *octets,
    size_t len)
{
	char	 id[ULID_LEN + 1], group[41], what[128], now[RFC3339_LEN];
	char	*b64;
	json_t	*doc;
	int	 ok;

	/* One message's parts: the same sender, number, reference, count. */
	snprintf(what, sizeof(what), "%s %s %u %u", from, to, c->ref,
	    c->total);
	receipt_index_key("smpp-parts", what, group);
	rfc3339_format(time(NULL), now, sizeof(now));
	if (ulid_new(id) == -1 || (b64 = mime_base64_encode(octets, len)) ==
	    NULL)
		return ESME_RX_T_APPN;
	doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:s, "
	    "s:s}", "version", MSGDOC_VERSION, "id", id, "group", group,
	    "from", from, "to", to, "ref", (int)c->ref, "total",
	    (int)c->total, "seq", (int)c->seq, "coding", (int)coding,
	    "octets", b64, "receivedAt", now);
	free(b64);
	ok = doc != NULL && spool_area_store(st->spool, PARTS_AREA,
	    (const json_t **)&doc, 1) == MSG_OK;
	json_decref(doc);
	if (!ok) {
		log_err("[%s] smpp: cannot keep part %u of %u from %s; the "
		    "SMSC is asked to send it again", st->section, c->seq,
		    c->total, from);
		return ESME_RX_T_APPN;
	}
	smpp_parts_join(st->spool, st->cfg, group, time(NULL), 0);
	return ESME_ROK;
}

uint32_t
smpp_inbound(struct smpp *st, const deliver_sm_t *d)
{
	struct concat	 c = { 0, 0, 0, 0 };
	const uint8_t	*sm;
	char		 from[ADDR_MAX], to[ADDR_MAX];
	json_t		*doc;
	size_t		 len, skip = 0;
	uint32_t	 r;

	if (address(d->source_addr, d->source_addr_ton, from,
	    sizeof(from)) == -1) {
		log_warn("[%s] smpp: a message from a source_addr that is no "
		    "address refused", st->section);
		return ESME_RINVSRCADR;
	}
	if (address(d->destination_addr, d->dest_addr_ton, to,
	    sizeof(to)) == -1) {
		log_warn("[%s] smpp: a message from %s to a destination_addr "
		    "that is no address refused", st->section, from);
		return ESME_RINVDSTADR;
	}
	payload(d, &sm, &len);
	if ((d->esm_class & 0x40) && udh_parse(sm, len, &c, &skip) == -1) {
		log_warn("[%s] smpp: a message from %s with a broken UDH "
		    "refused", st->section, from);
		return ESME_RX_P_APPN;
	}
	if (!c.present)
		sar_parse(d, &c);
	if (c.present && (c.total < 1 || c.seq < 1 || c.seq > c.total)) {
		log_warn("[%s] smpp: a message from %s said to be part %u of "
		    "%u refused", st->section, from, c.seq, c.total);
		return ESME_RX_P_APPN;
	}
	if (st->spool == NULL)
		return ESME_RX_T_APPN;
	if (c.present && c.total > 1)
		return keep_part(st, from, to, &c, d->data_coding, sm + skip,
		    len - skip);
	if ((doc = inbound_doc(from, to, d->data_coding, sm + skip,
	    len - skip, time(NULL))) == NULL)
		return ESME_RX_T_APPN;
	r = keep(st, doc, NULL);
	json_decref(doc);
	return r;
}

/* ---------------------------------------------------------- joining */

/* The parts of inbox-parts/ by group: {GROUP: [part, …]}, name order. */
struct gather {
	struct spool	*spool;
	const char	*group;		/* only this one's, or NULL */
	json_t		*groups;
};

static int
gather_one(void *arg, const char *name)
{
	struct gather	*g = arg;
	json_t		*doc, *list;
	const char	*group;
	char		 err[512];

	if ((doc = spool_area_load(g->spool, PARTS_AREA, name, err,
	    sizeof(err))) == NULL) {
		if (errno != ENOENT) {
			log_err("smpp: %s; removed", err);
			spool_area_remove(g->spool, PARTS_AREA, name);
		}
		return 0;
	}
	group = json_string_value(json_object_get(doc, "group"));
	if (group == NULL || (g->group != NULL && strcmp(group, g->group) !=
	    0)) {
		json_decref(doc);
		return 0;
	}
	if ((list = json_object_get(g->groups, group)) == NULL) {
		list = json_array();
		json_object_set_new(g->groups, group, list);
	}
	json_array_append_new(list, doc);
	return 0;
}

/* An integer member. */
static long
num(const json_t *o, const char *key)
{
	return (long)json_integer_value(json_object_get(o, key));
}

/*
 * Keep the message of one group's parts (bytes[i]: part i + 1's, NULL
 * when it never came), and remove the parts.  1 when kept.
 */
static int
join_group(struct spool *s, const struct config *cfg, const json_t *parts,
    json_t **part, long total)
{
	const json_t	*first = json_array_get(parts, 0), *p;
	unsigned char	*octets = NULL, *o;
	char		 key[41], name[SPOOL_NAME_MAX], *text = NULL, *t;
	json_t		*doc = NULL, *missing;
	time_t		 at = 0, when;
	size_t		 len, all = 0, i;
	int		 same = 1, dup, binary = 0, r;
	long		 coding = num(part[0] ? part[0] : first, "coding");

	if ((missing = json_array()) == NULL)
		return 0;
	/* Joined as octets when they share a coding (a character may
	 * straddle two parts), else each decoded on its own. */
	for (i = 0; i < (size_t)total; i++)
		if (part[i] == NULL)
			json_array_append_new(missing, json_integer(
			    (json_int_t)i + 1));
		else if (num(part[i], "coding") != coding)
			same = 0;
	for (i = 0; i < (size_t)total; i++) {
		if (part[i] == NULL)
			continue;
		if (rfc3339_parse(json_string_value(json_object_get(part[i],
		    "receivedAt")), &when) == 0 && when > at)
			at = when;
		if (mime_base64_decode(json_string_value(json_object_get(
		    part[i], "octets")), strlen(json_string_value(
		    json_object_get(part[i], "octets"))), 0, &o, &len) != 0)
			goto out;
		if (same) {
			unsigned char *n = realloc(octets, all + len + 1);

			if (n == NULL) {
				free(o);
				goto out;
			}
			octets = n;
			memcpy(octets + all, o, len);
			all += len;
		} else {
			if ((r = gsm_decode((uint8_t)num(part[i], "coding"), o,
			    len, &t)) == -1) {
				free(o);
				goto out;
			}
			binary |= r == 1;
			if (t != NULL) {
				char *n = realloc(text, (text ? strlen(text) :
				    0) + strlen(t) + 1);

				if (n == NULL) {
					free(t);
					free(o);
					goto out;
				}
				if (text == NULL)
					n[0] = '\0';
				text = strcat(n, t);
				free(t);
			}
		}
		free(o);
	}
	if (same) {
		if ((r = gsm_decode((uint8_t)coding, octets ? octets :
		    (const unsigned char *)"", all, &text)) == -1)
			goto out;
		binary = r == 1;
	}
	if ((doc = inbox_new("sms", "smpp", NULL, json_string_value(
	    json_object_get(first, "from")), json_string_value(
	    json_object_get(first, "to")), binary ? NULL : text, binary ?
	    "binary" : "text", NULL, at ? at : time(NULL))) == NULL)
		goto out;
	if (json_array_size(missing) > 0) {
		json_object_set_new(doc, "parts", json_pack("{s:I, s:O}",
		    "total", (json_int_t)total, "missing", missing));
		log_warn("smpp: a message from %s in %ld parts kept without "
		    "%zu of them, which never came",
		    inbox_from(doc), total, json_array_size(missing));
	}
	inbox_set_owner(doc, cfg);
	/* Its first part's id names it: joined again after a crash, or by
	 * another daemon of a shared spool, it is kept once. */
	receipt_index_key("smpp-parts", json_string_value(json_object_get(
	    first, "id")), key);
	if (inbox_keep(s, doc, key, &dup) != MSG_OK) {
		json_decref(doc);
		doc = NULL;
		goto out;
	}
	json_array_foreach(parts, i, p) {
		snprintf(name, sizeof(name), "%s.json", json_string_value(
		    json_object_get(p, "id")));
		spool_area_remove(s, PARTS_AREA, name);
	}
out:
	json_decref(missing);
	free(octets);
	free(text);
	if (doc == NULL)
		log_err("smpp: the parts of a message from %s cannot be joined "
		    "now; tried again", json_string_value(json_object_get(first,
		    "from")));
	r = doc != NULL;
	json_decref(doc);
	return r;
}

size_t
smpp_parts_join(struct spool *s, const struct config *cfg,
    const char *group, time_t now, long wait)
{
	struct gather	 g = { s, group, NULL };
	const char	*k;
	json_t		*parts, *p, **part;
	time_t		 oldest, when;
	size_t		 i, kept = 0, got;
	long		 total, seq;

	if ((g.groups = json_object()) == NULL)
		return 0;
	spool_area_scan(s, PARTS_AREA, gather_one, &g);
	json_object_foreach(g.groups, k, parts) {
		total = num(json_array_get(parts, 0), "total");
		if (total < 1 || total > 255 ||
		    (part = calloc((size_t)total, sizeof(*part))) == NULL)
			continue;
		oldest = now;
		got = 0;
		json_array_foreach(parts, i, p) {
			seq = num(p, "seq");
			/* A part twice: the first that came. */
			if (seq >= 1 && seq <= total && part[seq - 1] == NULL) {
				part[seq - 1] = p;
				got++;
			}
			if (rfc3339_parse(json_string_value(json_object_get(p,
			    "receivedAt")), &when) == 0 && when < oldest)
				oldest = when;
		}
		if (got == (size_t)total || (wait > 0 && now - oldest >= wait))
			kept += (size_t)join_group(s, cfg, parts, part, total);
		free(part);
	}
	json_decref(g.groups);
	return kept;
}
