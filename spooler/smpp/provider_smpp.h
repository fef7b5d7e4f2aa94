/*
 * provider_smpp.h: the smpp provider as msgspoold sees it (msgspool.conf(5),
 * "The smpp provider"): one entry of its table of providers.  What the
 * provider's own files share, on libsmpp34, is in smpp.h.
 */
#ifndef PROVIDER_SMPP_H
#define PROVIDER_SMPP_H

#include <time.h>

#include "providers/provider.h"

extern const struct provider provider_smpp;

/* Seconds the parts of an inbound SMS wait for the rest (msgspoold(8)). */
#define SMPP_PARTS_WAIT		600

/*
 * The inbound SMS in concatenated parts kept in inbox-parts/ (msgspool-
 * spool(5)): one all of whose parts have come, or (wait > 0) whose first
 * part came wait seconds ago or more, is kept as one inbound message
 * (inbox.h) of the client cfg names, the parts that came in their order,
 * and its parts removed.  group names one message's parts (NULL:
 * every one's).  Returns how many messages were kept.
 */
size_t	smpp_parts_join(struct spool *, const struct config *,
	    const char *group, time_t now, long wait);

#endif
