/*
 * provider_smpp.h: the smpp provider as msgspoold sees it (msgspool.conf(5),
 * "The smpp provider"): one entry of its table of providers.  What the
 * provider's own files share, on libsmpp34, is in smpp.h.
 */
#ifndef PROVIDER_SMPP_H
#define PROVIDER_SMPP_H

#include "providers/provider.h"

extern const struct provider provider_smpp;

#endif
