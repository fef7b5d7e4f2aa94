/*
 * provider.c: the table of providers and routing by channel.
 */
#include <stdio.h>
#include <string.h>

#include "provider.h"

static const struct provider *const providers[] = {
	&provider_file,
};

const struct provider *
provider_find(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
		if (strcmp(providers[i]->name, name) == 0)
			return providers[i];
	return NULL;
}

const char *
provider_section(const json_t *doc, char *buf, size_t len)
{
	const char	*ch;
	json_t		*type;

	ch = json_string_value(json_object_get(doc, "channel"));
	if (ch == NULL)
		return NULL;
	if (strcmp(ch, "ott") == 0) {
		type = json_object_get(json_object_get(doc, "message"),
		    "channelType");
		if (!json_is_integer(type))
			return NULL;
		snprintf(buf, len, "ott.%lld",
		    (long long)json_integer_value(type));
		return buf;
	}
	if (strcmp(ch, "sms") != 0 && strcmp(ch, "voice") != 0 &&
	    strcmp(ch, "email") != 0)
		return NULL;
	snprintf(buf, len, "%s", ch);
	return buf;
}
