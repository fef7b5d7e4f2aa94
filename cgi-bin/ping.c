/*
 * ping: GET /ping, the health check (conf/openapi.yaml).  No key, no config.
 */
#include <unistd.h>

#include "cgi.h"

static struct response *
ping(struct ctx *ctx)
{
	(void)ctx;
	return response_new(200, "text/plain; charset=utf-8", "pong", 4);
}

static const struct endpoint endpoint = {
	.method = "GET",
	.handler = ping,
};

CGI_MAIN(endpoint)
