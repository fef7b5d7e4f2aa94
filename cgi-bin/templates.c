/*
 * templates: GET /templates, the caller's email templates
 * (conf/openapi.yaml; the directory in msgspool.conf(5)), sorted by
 * createdDate.
 */
#include <unistd.h>

#include "content/tmpl.h"
#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"

static struct response *
templates(struct ctx *ctx)
{
	json_t	*list;

	if ((list = tmpl_list_email(ctx->templates, ctx->client->id)) == NULL)
		return response_error(500, "the templates cannot be listed");
	return response_json(200, list);
}

const struct endpoint ep_templates = {
	.method = "GET",
	.needs_key = 1,
	.handler = templates,
};

CGI_MAIN(ep_templates)
