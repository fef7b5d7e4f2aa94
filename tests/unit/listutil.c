/*
 * listutil.c: what the tests of the clients' lists share (test_list*.c):
 * a filter, a message queued through the commit engine, a page as JSON,
 * lists built.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/channel.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "listutil.h"
#include "testutil.h"

void
filter_init(struct list_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->channel = -1;
	f->direction = -1;
	f->since = -1;
	f->until = -1;
	f->limit = 50;
}

/* A message of client to recipient queued into new/ through the
 * commit engine; its id into id. */
void
queue(struct tu_spool *f, const char *client, const char *to,
    const char *ref, char *id)
{
	json_t	*doc;

	assert_int_equal(ulid_new(id), 0);
	doc = msgdoc_new(id, "sms", client, 0, json_pack("{s:s, s:s}", "to",
	    to, "body", "hi"));
	assert_non_null(doc);
	if (ref != NULL)
		json_object_set_new(doc, "reference", json_string(ref));
	assert_int_equal(spool_enqueue(f->sp, doc, SPOOL_NEW), MSG_OK);
	json_decref(doc);
}

/* A page as a JSON array; *next the cursor ("" at the end). */
json_t *
page(struct tu_spool *f, const char *client, const struct list_filter *flt,
    char *next)
{
	struct buf	 b = { 0 };
	json_t		*a;
	size_t		 n;

	buf_puts(&b, "[");
	assert_int_equal(list_page(f->sp, client, flt, time(NULL), 0, &b, &n,
	    next), 0);
	buf_puts(&b, "]");
	a = json_loads(b.p, 0, NULL);
	assert_non_null(a);
	assert_int_equal(json_array_size(a), n);
	buf_free(&b);
	return a;
}

int
idcmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

const char *
id_at(json_t *a, size_t i)
{
	return json_string_value(json_object_get(json_array_get(a, i), "id"));
}

/* Built lists: what msgspoold makes of an empty spool. */
void
build(struct tu_spool *f)
{
	char	err[256];

	assert_true(list_reindex(f->sp, NULL, NULL, err, sizeof(err)) >= 0);
	assert_true(list_built(f->sp));
}
