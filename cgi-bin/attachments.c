/*
 * attachments: POST /email/v1/attachments, the deprecated upload
 * (conf/openapi.yaml).  {"attachmentName","content"} -> 201
 * {"attachmentId","attachmentName","contentType","size"} with
 * "Deprecation: true" and a Link to the inline way.  The upload belongs
 * to the calling client and expires after 7 days.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/mime.h"
#include "base/valid.h"
#include "endpoints.h"
#include "http/attach.h"
#include "http/cgi.h"
#include "http/problem.h"
#include "spool/spool.h"

static const struct field upload_fields[] = {
	{ "attachmentName", FIELD_STRING, FIELD_REQUIRED, 0, 0,
	    mime_filename_check, NULL, 0 },
	{ "content", FIELD_STRING, FIELD_REQUIRED, 0, 0, NULL, NULL, 0 },
	FIELD_END
};

static struct response *
deprecated(struct response *r)
{
	if (r != NULL) {
		response_header(r, "Deprecation", "true");
		response_header(r, "Link", "</deliver>; rel=\"alternate\"; "
		    "title=\"send attachments inline in the attachments of "
		    "POST /deliver\"");
	}
	return r;
}

static struct response *
upload(struct ctx *ctx)
{
	struct attach_ctx c = { NULL, NULL, 0, 0, NULL, 0 };
	struct problem	*p;
	json_t		*doc, *reply;
	unsigned char	*data;
	char		 id[SPOOL_ID_LEN + 1], type[128];
	char		*b64;
	size_t		 len;
	int		 rc;
	enum msg_status	 st;

	if ((p = problem_new(400, "invalid-field",
	    "the upload is not valid")) == NULL)
		return NULL;
	if (valid_object(ctx->body, upload_fields, "", p->errors) > 0)
		return deprecated(problem_response(p));
	rc = attach_decode(&c, json_object_get(ctx->body, "content"),
	    ctx->limits->attachment, &data, &len, type, sizeof(type));
	attach_ctx_free(&c);
	if (rc == -3) {
		problem_free(p);
		return deprecated(response_error(500,
		    "the upload cannot be typed now"));
	}
	if (rc != 0) {
		if (rc == -2) {
			p->status = 413;
			problem_add(p, "content", "decodes to more than %zu "
			    "bytes", ctx->limits->attachment);
		} else
			problem_add(p, "content", "must be base64 (RFC 4648)");
		return deprecated(problem_response(p));
	}
	problem_free(p);
	b64 = mime_base64_encode(data, len);
	free(data);
	if (b64 == NULL || ulid_new(id) == -1) {
		free(b64);
		return deprecated(response_error(503,
		    "the spool cannot take uploads now"));
	}
	doc = msgdoc_upload_new(id, ctx->client->id, json_string_value(
	    json_object_get(ctx->body, "attachmentName")), type, len,
	    time(NULL), b64);
	free(b64);
	st = doc ? spool_upload_store(ctx->spool, ctx->client->id, doc) :
	    MSG_TEMPFAIL;
	json_decref(doc);
	if (st != MSG_OK)
		return deprecated(response_error(st == MSG_TEMPFAIL ? 503 : 500,
		    "the spool cannot take uploads now"));
	reply = json_pack("{s:s, s:O, s:s, s:I}", "attachmentId", id,
	    "attachmentName", json_object_get(ctx->body, "attachmentName"),
	    "contentType", type, "size", (json_int_t)len);
	return deprecated(response_json(201, reply));
}

const struct endpoint ep_attachments = {
	.method = "POST",
	.needs_key = 1,
	.scope = SCOPE_EMAIL,
	.limit = LIMIT_EMAIL,
	.needs_spool = 1,
	.handler = upload,
	.idempotent = 1,
};

CGI_MAIN(ep_attachments)
