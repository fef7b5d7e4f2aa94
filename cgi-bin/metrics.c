/*
 * metrics: GET /metrics, Prometheus' text format 0.0.4 (conf/openapi.yaml
 * /metrics, msgspoold(8) Metrics): the spool's queue read now, msgspoold's
 * counters from its state file (spool/metrics.h).  A key with the metrics
 * scope, as X-API-KEY or Authorization: Bearer.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "endpoints.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/metrics.h"

static struct response *
metrics(struct ctx *ctx)
{
	struct buf	 b = { 0 };
	struct response	*r;
	json_t		*daemon;

	daemon = spool_status_get(ctx->spool, METRICS_STATUS);
	if (metrics_render(ctx->spool, daemon, time(NULL), &b) == -1) {
		json_decref(daemon);
		buf_free(&b);
		return problem_response(problem_new(500, "internal",
		    "the spool's queue could not be read"));
	}
	json_decref(daemon);
	r = response_new(200, METRICS_CONTENT_TYPE, b.p, b.len);
	buf_free(&b);
	return r;
}

const struct endpoint ep_metrics = {
	.method = "GET",
	.needs_key = 1,
	.scope = SCOPE_METRICS,
	.needs_spool = 1,
	.handler = metrics,
};

CGI_MAIN(ep_metrics)
