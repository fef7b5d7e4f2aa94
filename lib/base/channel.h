/*
 * channel.h: the four channels msgspool carries, in one table that the
 * CGI programs, the keys, the daemon and the CLI all read: a channel's
 * name (in spool documents and key scopes), its scope bit, the config
 * section that routes it, and the reply field naming its message id.
 * See msgspool.conf(5) for the sections and msgspool(8) for the scopes.
 */
#ifndef CHANNEL_H
#define CHANNEL_H

#include <stddef.h>
#include <jansson.h>

/*
 * What a key may do (keys.h): the channels' bits, SCOPE_ALL ("*") being
 * every channel; and two that are no channel, granted only by name:
 * "metrics" (GET /metrics) and "admin" (acting for another client,
 * client=ID).  See msgspool.conf(5), KEYS FILE.
 */
enum scope {
	SCOPE_SMS = 1 << 0,
	SCOPE_OTT = 1 << 1,
	SCOPE_EMAIL = 1 << 2,
	SCOPE_VOICE = 1 << 3,
	SCOPE_ALL = (1 << 4) - 1,
	SCOPE_METRICS = 1 << 4,
	SCOPE_ADMIN = 1 << 5
};

enum channel {
	CHANNEL_SMS,
	CHANNEL_OTT,
	CHANNEL_EMAIL,
	CHANNEL_VOICE,
	CHANNEL__MAX
};

struct channel_info {
	const char	*name;		/* "sms": documents, scopes, sections */
	unsigned	 scope;		/* its SCOPE_* bit (keys.h) */
	int		 numbered;	/* routed by "[name.N]", N per message */
	const char	*idkey;		/* the reply's id field ("smsId") */
};

/* The channel's row; NULL for an out-of-range value. */
const struct channel_info *channel_info(enum channel);

/* The channel of a name ("sms"); -1 when there is none. */
int		 channel_parse(const char *name);

/*
 * The name of a single scope bit ("sms", "metrics", "admin"), "?" when
 * it is not one.
 */
const char	*channel_scope_name(unsigned scope);

/*
 * The channel a config section routes: "sms", "voice", "email", or
 * "ott.N" with N decimal digits.  -1 when the section is no channel's.
 */
int		 channel_of_section(const char *section);

/*
 * The config section that routes a spool document: its "channel", and
 * for a numbered channel the message's "channelType" ("ott.3").  Into
 * buf; NULL when the document names no known channel.
 */
const char	*channel_section(const json_t *doc, char *buf, size_t len);

/* The section of a numbered channel's number N ("ott.N") into buf. */
const char	*channel_numbered_section(enum channel, long long n,
		    char *buf, size_t len);

#endif
