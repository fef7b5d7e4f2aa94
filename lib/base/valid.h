/*
 * valid.h: validators for request fields, and the declarative field
 * table every endpoint uses to check its body before its handler runs.
 */
#ifndef VALID_H
#define VALID_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

/*
 * A validator for a string value: NULL when good, else a message naming
 * what is wrong ("must be + and 8 to 15 digits").
 */
typedef const char *(*valid_fn)(const char *s, size_t len);

enum field_type {
	FIELD_STRING,
	FIELD_INTEGER,
	FIELD_BOOLEAN,
	FIELD_OBJECT,	/* checked against sub */
	FIELD_ARRAY,	/* of items checked against item */
	FIELD_STRMAP	/* object whose values are all strings */
};

#define FIELD_REQUIRED	0x1
#define FIELD_NONEMPTY	0x2	/* strings: at least one character */
#define FIELD_NULLABLE	0x4	/* null counts as absent */

struct field {
	const char		*name;
	enum field_type		 type;
	unsigned		 flags;
	size_t			 min;	/* string chars, array items, int */
	size_t			 max;	/* 0: no limit */
	valid_fn		 check;	/* strings, and array of strings */
	const struct field	*sub;	/* OBJECT fields; ARRAY of OBJECT */
	enum field_type		 item;	/* ARRAY item type */
};

/* Terminates a table. */
#define FIELD_END	{ NULL, 0, 0, 0, 0, NULL, NULL, 0 }

/*
 * Check obj against a table (ending with FIELD_END).  Messages go into
 * errors (an object: JSON path -> array of strings), each path prefixed
 * with prefix ("payload[3]").  Unknown members are errors too, so a
 * typo never passes silently.  Returns the number of messages added.
 */
size_t		 valid_object(const json_t *obj, const struct field *table,
		    const char *prefix, json_t *errors);

/*
 * The batch limit (max-batch) on body[name], an array already checked
 * by the table.  Returns 1 and adds a message when it is over, else 0.
 */
size_t		 valid_batch(const json_t *body, const char *name, size_t max,
		    json_t *errors);

/* Append a message for a path to an errors object. */
void		 valid_error(json_t *errors, const char *path,
		    const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

/* Whether len bytes are UTF-8 with no NUL; returns the char count or -1. */
long		 valid_utf8(const char *s, size_t len);

/* Validators. */
const char	*valid_e164(const char *s, size_t len);	/* +, 8-15 digits */
const char	*valid_msisdn(const char *s, size_t len); /* 8-15 digits */
const char	*valid_rfc3339(const char *s, size_t len);
const char	*valid_email(const char *s, size_t len);
const char	*valid_https_url(const char *s, size_t len);
const char	*valid_header(const char *s, size_t len); /* no CR/LF */
const char	*valid_ident(const char *s, size_t len);  /* template id */

/*
 * A client's own reference of a message (conf/openapi.yaml,
 * MessageReference): 1 to REFERENCE_MAX characters (code points), none
 * of them a control character (U+0000 to U+001F, U+007F to U+009F), so
 * that it is one line of text wherever it goes.  The one rule for it:
 * every send route's table has FIELD_REFERENCE (null counts as absent),
 * and a route that checks it alone calls valid_reference.
 */
#define REFERENCE_MAX	128
const char	*valid_reference(const char *s, size_t len);
#define FIELD_REFERENCE							\
	{ .name = "reference", .type = FIELD_STRING,			\
	    .flags = FIELD_NULLABLE, .check = valid_reference }

/*
 * Whether a client id is [A-Za-z0-9_.-]{1,64}, not starting with '.': the
 * one rule for a client's name, in the keys file, the config's
 * [client.ID] and the spool's folders of each client.
 */
#define CLIENT_ID_MAX	64
int		 valid_client_id(const char *id);

#endif
