/*
 * batch.c: several messages of one request, committed together.
 */
#include <stdlib.h>

#include "http/batch.h"
#include "http/http.h"
#include "http/problem.h"

int
batch_init(struct batch *b, size_t n, const char *idkey)
{
	b->docs.items = NULL;
	b->docs.n = b->docs.cap = 0;
	b->n = b->queued = 0;
	b->cap = n ? n : 1;
	b->idkey = idkey;
	b->slots = calloc(b->cap, sizeof(*b->slots));
	b->replies = json_array();
	if (b->slots == NULL || b->replies == NULL) {
		batch_free(b);
		return -1;
	}
	return 0;
}

int
batch_add(struct batch *b, json_t *reply, json_t *doc, enum spool_dir dest)
{
	ssize_t	*v, slot = -1;

	if (reply == NULL) {
		json_decref(doc);
		return -1;
	}
	if (b->n == b->cap) {
		if ((v = reallocarray(b->slots, b->cap * 2,
		    sizeof(*v))) == NULL) {
			json_decref(reply);
			json_decref(doc);
			return -1;
		}
		b->slots = v;
		b->cap *= 2;
	}
	if (doc != NULL && (slot = spool_batch_add(&b->docs, doc, dest)) ==
	    -1) {
		json_decref(reply);
		return -1;
	}
	if (json_array_append_new(b->replies, reply) == -1)
		return -1;
	b->slots[b->n++] = slot;
	return 0;
}

int
batch_has_doc(const struct batch *b, size_t i)
{
	return i < b->n && b->slots[i] >= 0;
}

int
batch_commit(struct batch *b, struct spool *s)
{
	enum msg_status	 st;
	json_t		*res;
	size_t		 i, temp = 0, perm = 0;

	spool_batch_commit(s, &b->docs);
	b->queued = 0;
	for (i = 0; i < b->n; i++) {
		if (b->slots[i] < 0)
			continue;
		if ((st = spool_batch_status(&b->docs, (size_t)b->slots[i])) ==
		    MSG_OK) {
			b->queued++;
			continue;
		}
		if (st == MSG_TEMPFAIL)
			temp++;
		else
			perm++;
		res = json_array_get(b->replies, i);
		json_object_set_new(res, b->idkey, json_null());
		json_object_set_new(res, "status", json_string("error"));
		json_object_set_new(res, "error", json_string(BATCH_TRY_AGAIN));
		json_object_del(res, "sendAt");
	}
	/* Nothing queued for a reason of ours is not a 200. */
	if (b->queued == 0 && temp + perm > 0)
		return temp > 0 ? 503 : 500;
	return 0;
}

struct response *
batch_respond(struct batch *b, struct spool *s)
{
	json_t	*replies;
	int	 fail;

	if ((fail = batch_commit(b, s)) != 0) {
		batch_free(b);
		return response_error(fail, "the spool cannot take messages now");
	}
	replies = json_incref(batch_replies(b));
	batch_free(b);
	return response_json(200, replies);
}

int
batch_queued(const struct batch *b, size_t i)
{
	return batch_has_doc(b, i) && spool_batch_status(&b->docs,
	    (size_t)b->slots[i]) == MSG_OK;
}

json_t *
batch_replies(const struct batch *b)
{
	return b->replies;
}

void
batch_free(struct batch *b)
{
	spool_batch_free(&b->docs);
	json_decref(b->replies);
	free(b->slots);
	b->replies = NULL;
	b->slots = NULL;
	b->n = b->cap = 0;
}
