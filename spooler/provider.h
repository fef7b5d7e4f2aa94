/*
 * provider.h: how msgspoold hands a message to the outside world.  One
 * struct provider per implementation, one file each (provider_NAME.c).
 */
#ifndef PROVIDER_H
#define PROVIDER_H

#include <stddef.h>
#include <jansson.h>

#include "config.h"
#include "msgspool.h"

struct provider {
	const char	*name;
	/*
	 * Read the provider's keys from [section] of the config.  Returns
	 * its state (freed with free_state), or NULL with a reason in err.
	 */
	void		*(*init)(const struct config *, const char *section,
			    const char *spool_root, char *err, size_t errlen);
	/*
	 * Send one spool document.  MSG_OK with *reply a new reference to
	 * what the provider answered; otherwise the reason in err, and
	 * MSG_TEMPFAIL when trying again later may succeed.
	 */
	enum msg_status	 (*send)(void *state, const json_t *doc,
			    json_t **reply, char *err, size_t errlen);
	void		 (*free_state)(void *state);
};

extern const struct provider provider_file;

/* The provider called name, or NULL. */
const struct provider	*provider_find(const char *name);

/*
 * The config section that routes a spool document: "sms", "voice",
 * "email", or "ott.N" for message.channelType N.  Into buf; NULL when
 * the document names no known channel.
 */
const char		*provider_section(const json_t *doc, char *buf,
			    size_t len);

#endif
