/*
 * attach.c: email attachments as a request gives them (attach.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mime.h"
#include "content/mimetype.h"
#include "http/attach.h"
#include "http/problem.h"
#include "spool/spool.h"

int
attach_decode(struct attach_ctx *c, const json_t *content, size_t max,
    unsigned char **data, size_t *len, char *type, size_t typelen)
{
	char	err[256];
	int	rc;

	if ((rc = mime_base64_decode(json_string_value(content),
	    json_string_length(content), max, data, len)) != 0)
		return rc;
	if (c->magic == NULL &&
	    (c->magic = mimetype_new(err, sizeof(err))) == NULL) {
		log_err("attachments: %s", err);
		free(*data);
		*data = NULL;
		return -3;
	}
	mimetype_detect(c->magic, *data, *len, type, typelen);
	return 0;
}

void
attach_ctx_free(struct attach_ctx *c)
{
	mimetype_free(c->magic);
	c->magic = NULL;
}

void
attach_free(struct attachments *a)
{
	size_t	i;

	for (i = 0; i < a->n; i++) {
		free(a->v[i].name);
		json_decref(a->v[i].base64);
		free(a->v[i].data);
	}
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

/*
 * Append an attachment with its content as base64 or as bytes (data,
 * size of them); name, base64 and data are taken over.
 */
static int
attach_add(struct attachments *a, char *name, const char *type,
    size_t size, json_t *base64, unsigned char *data)
{
	struct attachment	*v;

	if (name == NULL || (base64 == NULL && data == NULL) ||
	    (v = reallocarray(a->v, a->n + 1, sizeof(*v))) == NULL) {
		free(name);
		json_decref(base64);
		free(data);
		return -1;
	}
	a->v = v;
	v[a->n].name = name;
	snprintf(v[a->n].type, sizeof(v[a->n].type), "%s", type);
	v[a->n].size = size;
	v[a->n].base64 = base64;
	v[a->n].data = data;
	a->n++;
	return 0;
}

int
attach_load(struct attach_ctx *c, const json_t *list, const char *path,
    struct attachments *out, struct problem *p, int bytes)
{
	const json_t	*item, *content, *upload_id;
	json_t		*up;
	unsigned char	*data;
	const char	*name;
	char		 ipath[64], type[128], *b64;
	json_t		*enc;
	size_t		 i, len, total = 0;
	int		 rc, bad = 0;

	json_array_foreach(list, i, item) {
		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		content = json_object_get(item, "content");
		upload_id = json_object_get(item, "attachmentId");
		name = json_string_value(json_object_get(item,
		    "attachmentName"));
		if ((content == NULL) == (upload_id == NULL)) {
			problem_add(p, ipath, "supply content (base64) or "
			    "attachmentId, not both");
			bad = 1;
			continue;
		}
		if (upload_id != NULL) {
			up = spool_upload_load(c->spool, c->client,
			    json_string_value(upload_id));
			if (up == NULL) {
				problem_add(p, ipath, "no attachment '%s' "
				    "uploaded by this client in the last 7 "
				    "days", json_string_value(upload_id));
				bad = 1;
				continue;
			}
			len = (size_t)json_integer_value(json_object_get(up,
			    "size"));
			total += len;
			enc = json_incref(json_object_get(up, "content"));
			data = NULL;
			/* Its bytes, to store once: the upload holds base64. */
			if (bytes) {
				rc = mime_base64_decode(json_string_value(enc),
				    json_string_length(enc), 0, &data, &len);
				json_decref(enc);
				enc = NULL;
				if (rc != 0) {
					problem_add(p, ipath, "the upload '%s' "
					    "cannot be read", json_string_value(
					    upload_id));
					bad = 1;
					json_decref(up);
					continue;
				}
			}
			if (attach_add(out, strdup(name ? name :
			    json_string_value(json_object_get(up,
			    "attachmentName"))), json_string_value(
			    json_object_get(up, "contentType")), len, enc,
			    data) == -1)
				bad = 1;
			json_decref(up);
			continue;
		}
		if (name == NULL) {
			snprintf(ipath, sizeof(ipath), "%s[%zu].attachmentName",
			    path, i);
			problem_add(p, ipath, "is required");
			bad = 1;
			continue;
		}
		snprintf(ipath, sizeof(ipath), "%s[%zu].content", path, i);
		rc = attach_decode(c, content, c->max_one, &data, &len,
		    type, sizeof(type));
		if (rc == -3) {
			c->failed = 1;
			return -1;
		}
		if (rc == -2) {
			problem_add(p, ipath, "decodes to more than %zu bytes",
			    c->max_one);
			p->status = 413;
			bad = 1;
			continue;
		}
		if (rc == -1) {
			problem_add(p, ipath, "must be base64 (RFC 4648)");
			bad = 1;
			continue;
		}
		total += len;
		if (bytes) {
			if (attach_add(out, strdup(name), type, len, NULL,
			    data) == -1)
				bad = 1;
			continue;
		}
		/* The client's text is kept when it is already canonical. */
		if (json_string_length(content) == (len + 2) / 3 * 4 &&
		    strspn(json_string_value(content), "ABCDEFGHIJKLMNOPQRSTUVW"
		    "XYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
		    json_string_length(content))
			enc = json_incref((json_t *)content);
		else if ((b64 = mime_base64_encode(data, len)) != NULL) {
			enc = json_string(b64);
			free(b64);
		} else
			enc = NULL;
		free(data);
		if (attach_add(out, strdup(name), type, len, enc,
		    NULL) == -1)
			bad = 1;
	}
	if (!bad && total > c->max_total) {
		problem_add(p, path, "attachments total %zu bytes, over the "
		    "limit of %zu per message", total,
		    c->max_total);
		p->status = 413;
		bad = 1;
	}
	return bad ? -1 : 0;
}

json_t *
attach_json(const struct attachments *a, int stored)
{
	json_t	*out = json_array();
	size_t	 i;

	for (i = 0; out != NULL && i < a->n; i++)
		json_array_append_new(out, stored ?
		    json_pack("{s:s, s:s, s:I, s:I}", "name", a->v[i].name,
		    "contentType", a->v[i].type, "size",
		    (json_int_t)a->v[i].size, "blob", (json_int_t)i) :
		    json_pack("{s:s, s:s, s:I, s:O}", "name", a->v[i].name,
		    "contentType", a->v[i].type, "size",
		    (json_int_t)a->v[i].size, "content", a->v[i].base64));
	return out;
}
