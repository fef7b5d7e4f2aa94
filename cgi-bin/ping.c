/*
 * ping: GET /ping, the health check (conf/openapi.yaml).  No key, no config.
 */
#include <unistd.h>

#include "endpoints.h"
#include "http/cgi.h"

static struct response *
ping(struct ctx *ctx)
{
	(void)ctx;
	return response_new(200, "text/plain; charset=utf-8", "pong", 4);
}

const struct endpoint ep_ping = {
	.method = "GET",
	.handler = ping,
};

CGI_MAIN(ep_ping)
