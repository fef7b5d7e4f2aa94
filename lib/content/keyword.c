/*
 * keyword.c: the keywords of inbound messages, their lists and replies
 * (keyword.h).
 */
#include <stdio.h>
#include <string.h>

#include <nettle/sha2.h>

#include "base/ulid.h"
#include "base/util.h"
#include "base/valid.h"
#include "content/keyword.h"
#include "spool/inbox.h"
#include "spool/msgdoc.h"

/* What the reply id's hash covers before the inbound id. */
#define REPLY_CONTEXT	"msgspool-keyword-reply:"
/* ULID: its time in the first 10 characters, 80 bits after them. */
#define ULID_TIME_LEN	10

static const char *const names[KEYWORD__MAX] = { "stop", "start", "help" };
static const char *const list_keys[KEYWORD__MAX] = { "stop-keywords",
    "start-keywords", "help-keywords" };
static const char *const reply_keys[KEYWORD__MAX] = { "stop-reply",
    "start-reply", "help-reply" };
static const char *const defaults[KEYWORD__MAX] = { KEYWORD_STOP_DEFAULT,
    KEYWORD_START_DEFAULT, KEYWORD_HELP_DEFAULT };

const char *
keyword_name(enum keyword k)
{
	return k < KEYWORD__MAX ? names[k] : "?";
}

/*
 * The code point at s[*i], *i moved past it; -1 for a byte sequence
 * that is not UTF-8 (overlong, a surrogate, past U+10FFFF, cut short).
 */
static long
next_cp(const unsigned char *s, size_t len, size_t *i)
{
	static const long	 least[] = { 0, 0x80, 0x800, 0x10000 };
	long			 cp;
	size_t			 n, k;

	if (s[*i] < 0x80)
		return s[(*i)++];
	if (s[*i] >= 0xc2 && s[*i] <= 0xdf)
		n = 1;
	else if ((s[*i] & 0xf0) == 0xe0)
		n = 2;
	else if (s[*i] >= 0xf0 && s[*i] <= 0xf4)
		n = 3;
	else
		return -1;
	if (len - *i < n + 1)
		return -1;
	cp = s[*i] & (0x3f >> n);
	for (k = 1; k <= n; k++) {
		if ((s[*i + k] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[*i + k] & 0x3f);
	}
	if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*i += n + 1;
	return cp;
}

/* Whether cp is a blank: ASCII's, and Unicode's spaces. */
static int
blank(long cp)
{
	return cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || cp == 0xa0 ||
	    cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
	    cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/*
 * cp in lower case: the simple case folding of ASCII, Latin-1, Latin
 * Extended-A, Greek and Cyrillic capitals (the letters of the keywords
 * people write, in French, Polish, Greek or Russian too), cp itself
 * otherwise.
 */
static long
fold_cp(long cp)
{
	if (cp >= 'A' && cp <= 'Z')
		return cp + 32;
	if (cp >= 0xc0 && cp <= 0xde && cp != 0xd7)
		return cp + 32;
	if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14a && cp <= 0x177))
		return cp % 2 == 0 ? cp + 1 : cp;
	if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e))
		return cp % 2 == 1 ? cp + 1 : cp;
	if (cp == 0x178)
		return 0xff;
	if (cp == 0x17f)
		return 's';
	if (cp >= 0x391 && cp <= 0x3a9 && cp != 0x3a2)
		return cp + 32;
	if (cp == 0x3c2)
		return 0x3c3;	/* final sigma */
	if (cp >= 0x400 && cp <= 0x40f)
		return cp + 80;
	if (cp >= 0x410 && cp <= 0x42f)
		return cp + 32;
	return cp;
}

/* Append cp as UTF-8 to out at *n (room for cap bytes).  0, or -1. */
static int
put_cp(char *out, size_t cap, size_t *n, long cp)
{
	unsigned char	b[4];
	size_t		k, len;

	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		len = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		len = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		len = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | cp >> 18);
		b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (unsigned char)(0x80 | (cp & 0x3f));
		len = 4;
	}
	if (cap - *n < len + 1)
		return -1;
	for (k = 0; k < len; k++)
		out[(*n)++] = (char)b[k];
	return 0;
}

int
keyword_fold(const char *s, size_t len, char *out, size_t outlen)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i = 0, n = 0;
	long			 cp;
	int			 gap = 0;

	if (outlen == 0)
		return -1;
	while (i < len) {
		if ((cp = next_cp(u, len, &i)) == -1)
			return -1;
		if (blank(cp)) {
			gap = n > 0;
			continue;
		}
		/* NUL, C0 and C1 controls, DEL: no keyword holds them. */
		if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
			return -1;
		if ((gap && put_cp(out, outlen, &n, ' ') == -1) ||
		    put_cp(out, outlen, &n, fold_cp(cp)) == -1)
			return -1;
		gap = 0;
	}
	out[n] = '\0';
	return (int)n;
}

/*
 * The next entry of a comma-separated list from *p on: its start, its
 * length in *len, *p past it and its comma; NULL past the last.  An
 * entry may be empty ("a,,b"), or blank.
 */
static const char *
next_entry(const char **p, size_t *len)
{
	const char	*s = *p;

	if (s == NULL)
		return NULL;
	*len = strcspn(s, ",");
	*p = s[*len] == ',' ? s + *len + 1 : NULL;
	return s;
}

/* Whether list names folded (a keyword folded). */
static int
list_has(const char *list, const char *folded)
{
	const char	*p = list, *e;
	char		 f[KEYWORD_MAX + 1];
	size_t		 len;

	while ((e = next_entry(&p, &len)) != NULL)
		if (keyword_fold(e, len, f, sizeof(f)) > 0 &&
		    strcmp(f, folded) == 0)
			return 1;
	return 0;
}

int
keyword_match(const struct keywords *kw, const char *text)
{
	char	f[KEYWORD_MAX + 1];
	int	k;

	/* A text longer than any keyword is none, whatever it holds. */
	if (text == NULL || keyword_fold(text, strlen(text), f, sizeof(f)) <=
	    0)
		return -1;
	for (k = 0; k < KEYWORD__MAX; k++)
		if (kw->list[k] != NULL && list_has(kw->list[k], f))
			return k;
	return -1;
}

/*
 * Check one list of section: each entry a keyword of no other list.  An
 * empty value is no keywords of that kind, but for stop.  0, or -1 with
 * the reason in err.
 */
static int
check_list(const struct keywords *kw, enum keyword k, const char *section,
    char *err, size_t errlen)
{
	const char	*p = kw->list[k], *e;
	char		 f[KEYWORD_MAX + 1];
	size_t		 len;
	int		 j;

	if (*p == '\0') {
		if (k != KEYWORD_STOP)
			return 0;
		util_seterr(err, errlen, "[%s] %s: empty: people must be able "
		    "to stop (leave the key out for the default)", section,
		    list_keys[k]);
		return -1;
	}
	while ((e = next_entry(&p, &len)) != NULL) {
		if (keyword_fold(e, len, f, sizeof(f)) <= 0) {
			util_seterr(err, errlen, "[%s] %s: '%.*s' is no "
			    "keyword (1 to %d bytes of UTF-8 text, entries "
			    "separated by commas)", section, list_keys[k],
			    (int)(len > 80 ? 80 : len), e, KEYWORD_MAX);
			return -1;
		}
		for (j = 0; j < KEYWORD__MAX; j++)
			if (j != (int)k && list_has(kw->list[j], f)) {
				util_seterr(err, errlen, "[%s] %s: '%s' is in "
				    "%s too: a keyword does one thing",
				    section, list_keys[k], f, list_keys[j]);
				return -1;
			}
	}
	return 0;
}

/* stop-channels: sms, and voice or not.  0, or -1 with the reason. */
static int
stop_channels(const char *v, const char *section, int *voice, char *err,
    size_t errlen)
{
	const char	*p = v;
	size_t		 n;
	int		 sms = 0;

	*voice = 0;
	if (v == NULL)
		return 0;
	for (;;) {
		p += strspn(p, ", \t");
		if (*p == '\0')
			break;
		n = strcspn(p, ", \t");
		if (n == 3 && strncmp(p, "sms", 3) == 0)
			sms = 1;
		else if (n == 5 && strncmp(p, "voice", 5) == 0)
			*voice = 1;
		else {
			util_seterr(err, errlen, "[%s] stop-channels: '%.*s': "
			    "an SMS stop suppresses sms, and voice when "
			    "listed, nothing else", section,
			    (int)(n > 40 ? 40 : n), p);
			return -1;
		}
		p += n;
	}
	if (!sms) {
		util_seterr(err, errlen, "[%s] stop-channels: must list sms "
		    "(\"sms\" or \"sms, voice\"): an SMS stop stops SMS",
		    section);
		return -1;
	}
	return 0;
}

int
keyword_config(const struct config *cfg, const char *client,
    struct keywords *kw, char *err, size_t errlen)
{
	char		 section[8 + 64 + 1];
	const char	*v;
	long		 chars;
	int		 k, pass;

	memset(kw, 0, sizeof(*kw));
	if (client == NULL || !valid_client_id(client)) {
		util_seterr(err, errlen, "not a client id");
		return -1;
	}
	snprintf(section, sizeof(section), "client.%s", client);
	for (k = 0; k < KEYWORD__MAX; k++) {
		v = config_get(cfg, section, list_keys[k]);
		kw->list[k] = v != NULL ? v : defaults[k];
		kw->reply[k] = config_get(cfg, section, reply_keys[k]);
	}
	/* The lists the section sets first: a clash names the key set. */
	for (pass = 0; pass < 2; pass++)
		for (k = 0; k < KEYWORD__MAX; k++)
			if ((kw->list[k] == defaults[k]) == pass &&
			    check_list(kw, (enum keyword)k, section, err,
			    errlen) == -1)
				return -1;
	for (k = 0; k < KEYWORD__MAX; k++) {
		if ((v = kw->reply[k]) == NULL)
			continue;
		chars = valid_utf8(v, strlen(v));
		if (chars <= 0 || chars > KEYWORD_REPLY_MAX) {
			util_seterr(err, errlen, "[%s] %s: %s", section,
			    reply_keys[k], chars == 0 ? "empty (leave the key "
			    "out for no reply)" : chars < 0 ? "not UTF-8 text" :
			    "longer than 1600 characters (one SMS's text)");
			return -1;
		}
	}
	return stop_channels(config_get(cfg, section, "stop-channels"),
	    section, &kw->stop_voice, err, errlen);
}

int
keyword_check_section(const struct config *cfg, const char *section,
    char *err, size_t errlen)
{
	struct keywords	kw;

	if (strncmp(section, "client.", 7) != 0 ||
	    !valid_client_id(section + 7))
		return 0;
	return keyword_config(cfg, section + 7, &kw, err, errlen);
}

int
keyword_reply_id(const char *inbound_id, char *out)
{
	static const char	 b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	struct sha256_ctx	 ctx;
	uint8_t			 h[SHA256_DIGEST_SIZE];
	unsigned		 acc = 0, bits = 0;
	size_t			 i, n = ULID_TIME_LEN;

	if (inbound_id == NULL || !ulid_valid(inbound_id))
		return -1;
	sha256_init(&ctx);
	sha256_update(&ctx, strlen(REPLY_CONTEXT),
	    (const uint8_t *)REPLY_CONTEXT);
	sha256_update(&ctx, strlen(inbound_id), (const uint8_t *)inbound_id);
	sha256_digest(&ctx, sizeof(h), h);
	memcpy(out, inbound_id, ULID_TIME_LEN);
	/* 16 characters of 5 bits: the first 10 bytes of the hash. */
	for (i = 0; n < ULID_LEN; ) {
		if (bits < 5) {
			acc = acc << 8 | h[i++];
			bits += 8;
		}
		bits -= 5;
		out[n++] = b32[acc >> bits & 0x1f];
	}
	out[ULID_LEN] = '\0';
	return 0;
}

json_t *
keyword_reply(const json_t *inbound, const char *to, enum keyword k,
    const char *text, time_t now)
{
	const char	*inid = msgdoc_id(inbound), *client, *from;
	char		 id[ULID_LEN + 1];
	json_t		*msg, *doc;

	client = inbox_client(inbound);
	from = inbox_to(inbound);
	if (k >= KEYWORD__MAX || client == NULL || from == NULL ||
	    to == NULL || text == NULL || keyword_reply_id(inid, id) == -1)
		return NULL;
	if ((msg = json_pack("{s:s, s:s, s:s}", "to", to, "from", from,
	    "body", text)) == NULL)
		return NULL;
	if ((doc = msgdoc_new(id, "sms", client, now, msg)) != NULL)
		msgdoc_set_reply(doc, inid, keyword_name(k));
	return doc;
}
