/*
 * sms.h: one SMS, as sms-deliver and each entry of sms-batch take it
 * (conf/openapi.yaml, ApiSmsRequest): {"recipient", "messageBody",
 * "sendAt"?, "reference"?}.
 */
#ifndef SMS_H
#define SMS_H

#include <time.h>
#include <jansson.h>

#include "base/msgspool.h"
#include "base/valid.h"
#include "content/keys.h"
#include "spool/spool.h"

#define SMS_BODY_MAX	1600	/* characters */

/* The fields of one SMS, for valid_object. */
extern const struct field sms_fields[];

struct sms_queued {
	char	id[SPOOL_ID_LEN + 1];
	int	scheduled;	/* sendAt in the future: in deferred/ */
	time_t	send_at;
};

/*
 * Validate one SMS object and build its spool document for client.
 * Returns the document (new reference) with *out filled, its state in
 * *dest; or NULL: messages in errors (paths under prefix) when it is
 * invalid, none when out of memory.
 */
json_t		*sms_build(const struct client *client, const json_t *sms,
		    const char *prefix, json_t *errors, struct sms_queued *out,
		    enum spool_dir *dest);

#endif
