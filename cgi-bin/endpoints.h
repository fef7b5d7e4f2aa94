/*
 * endpoints.h: the endpoint of each program in cgi-bin/ (conf/openapi.yaml
 * names the route of each).  A program's main serves its own; msgspool-fcgi
 * links them all and routes by path (msgspool-fcgi(8)).
 */
#ifndef ENDPOINTS_H
#define ENDPOINTS_H

#include "http/cgi.h"

extern const struct endpoint ep_attachments;	/* /email/v1/attachments */
/* /deliver and /email/v1/deliver */
extern const struct endpoint ep_email_deliver;
/* /console and /console/... */
extern const struct endpoint ep_console;
extern const struct endpoint ep_messages;	/* /messages/{id} */
extern const struct endpoint ep_metrics;	/* /metrics */
extern const struct endpoint ep_ott_deliver;	/* /ott/v1/deliver */
extern const struct endpoint ep_ping;		/* /ping */
extern const struct endpoint ep_receipts;	/* /receipts/{provider} */
extern const struct endpoint ep_sms_batch;	/* /sms/v1/deliver/batch */
extern const struct endpoint ep_sms_deliver;	/* /sms/v1/deliver */
/* /suppressions and /suppressions/{channel}/{address} */
extern const struct endpoint ep_suppressions;
extern const struct endpoint ep_templates;	/* /templates */
extern const struct endpoint ep_unsubscribe;	/* /unsubscribe/{token} */
extern const struct endpoint ep_voice_deliver;	/* /voice/v1/deliver */

#endif
