/*
 * channel.c: the table of channels.
 */
#include <stdio.h>
#include <string.h>

#include "base/channel.h"

static const struct channel_info channels[CHANNEL__MAX] = {
	[CHANNEL_SMS] = { .name = "sms", .scope = SCOPE_SMS,
	    .numbered = 0, .idkey = "smsId" },
	[CHANNEL_OTT] = { .name = "ott", .scope = SCOPE_OTT,
	    .numbered = 1, .idkey = "messageId" },
	[CHANNEL_EMAIL] = { .name = "email", .scope = SCOPE_EMAIL,
	    .numbered = 0, .idkey = "messageId" },
	[CHANNEL_VOICE] = { .name = "voice", .scope = SCOPE_VOICE,
	    .numbered = 0, .idkey = "callId" },
};

const struct channel_info *
channel_info(enum channel c)
{
	return (unsigned)c < CHANNEL__MAX ? &channels[c] : NULL;
}

int
channel_parse(const char *name)
{
	int	c;

	if (name == NULL)
		return -1;
	for (c = 0; c < CHANNEL__MAX; c++)
		if (strcmp(channels[c].name, name) == 0)
			return c;
	return -1;
}

const char *
channel_scope_name(unsigned scope)
{
	int	c;

	for (c = 0; c < CHANNEL__MAX; c++)
		if (channels[c].scope == scope)
			return channels[c].name;
	if (scope == SCOPE_METRICS)
		return "metrics";
	if (scope == SCOPE_ADMIN)
		return "admin";
	return "?";
}

int
channel_of_section(const char *section)
{
	const char	*dot;
	size_t		 len;
	int		 c;

	dot = strchr(section, '.');
	len = dot ? (size_t)(dot - section) : strlen(section);
	for (c = 0; c < CHANNEL__MAX; c++) {
		if (strlen(channels[c].name) != len ||
		    strncmp(channels[c].name, section, len) != 0)
			continue;
		if (!channels[c].numbered)
			return dot == NULL ? c : -1;
		/* "ott.N": a number, and nothing else. */
		if (dot == NULL || dot[1] == '\0' ||
		    strspn(dot + 1, "0123456789") != strlen(dot + 1))
			return -1;
		return c;
	}
	return -1;
}

const char *
channel_numbered_section(enum channel c, long long n, char *buf,
    size_t len)
{
	if ((unsigned)c >= CHANNEL__MAX || !channels[c].numbered || n < 0)
		return NULL;
	snprintf(buf, len, "%s.%lld", channels[c].name, n);
	return buf;
}

const char *
channel_section(const json_t *doc, char *buf, size_t len)
{
	json_t	*type;
	int	 c;

	if ((c = channel_parse(json_string_value(json_object_get(doc,
	    "channel")))) == -1)
		return NULL;
	if (!channels[c].numbered) {
		snprintf(buf, len, "%s", channels[c].name);
		return buf;
	}
	type = json_object_get(json_object_get(doc, "message"), "channelType");
	if (!json_is_integer(type))
		return NULL;
	return channel_numbered_section((enum channel)c,
	    (long long)json_integer_value(type), buf, len);
}
