/*
 * yj.c - YAML (libyaml's document loader) into jansson JSON.
 *
 * Plain scalars get YAML 1.2 core types (null, booleans, integers,
 * floats); quoted and block scalars stay strings.  Aliases are
 * expanded, with a bound on the nodes made, so a "billion laughs"
 * soul is refused instead of eating memory.  Duplicate keys are errors.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "heartint.h"

#define YJ_MAXNODES	100000
#define YJ_MAXDEPTH	64

struct yj_pos {
	const json_t *parent;	/* object or array holding the item */
	char	*key;		/* object key, or NULL for array items */
	size_t	 index;
	int	 kline, kcol;	/* where the key is */
	int	 vline, vcol;	/* where the value starts */
};

struct ctx {
	yaml_document_t *doc;
	struct yj *out;
	const char *file;
	int	 lineoff;
	size_t	 made;
	char	*err;
};

static json_t *node_json(struct ctx *, yaml_node_t *, int);

/* Only digits, with an optional sign: a YAML 1.2 core integer. */
static int
is_int(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Digits, one dot, an exponent: a decimal float (not inf, nan, hex). */
static int
is_float(const char *s)
{
	int digits = 0;

	for (; *s != '\0'; s++) {
		if (*s >= '0' && *s <= '9')
			digits++;
		else if (!strchr("+-.eE", *s))
			return 0;
	}
	return digits > 0;
}

static json_t *
plain_scalar(const char *s)
{
	char *end;
	long long ll;
	double d;

	if (*s == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	    strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0)
		return json_null();
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False") ||
	    !strcmp(s, "FALSE"))
		return json_false();
	if (is_int(s)) {
		errno = 0;
		ll = strtoll(s, &end, 10);
		if (errno == 0 && *end == '\0')
			return json_integer(ll);
	}
	if (is_float(s)) {
		d = strtod(s, &end);
		if (*end == '\0' && isfinite(d))
			return json_real(d);
	}
	return json_string(s);
}

static void
add_pos(struct ctx *c, const json_t *parent, const char *key, size_t index,
    yaml_node_t *k, yaml_node_t *v)
{
	struct yj *o = c->out;
	struct yj_pos *p;

	if ((o->npos & (o->npos - 1)) == 0) {	/* grow at powers of 2 */
		o->pos = realloc(o->pos, (o->npos ? o->npos * 2 : 1) *
		    sizeof *o->pos);
		if (o->pos == NULL)
			abort();
	}
	p = &o->pos[o->npos++];
	p->parent = parent;
	p->key = xstrdup(key);
	p->index = index;
	p->kline = (int)(k ? k : v)->start_mark.line + 1 + c->lineoff;
	p->kcol = (int)(k ? k : v)->start_mark.column + 1;
	p->vline = (int)v->start_mark.line + 1 + c->lineoff;
	p->vcol = (int)v->start_mark.column + 1;
}

static void
node_err(struct ctx *c, yaml_node_t *n, const char *what)
{
	errf(c->err, "%s:%d:%d: %s", c->file,
	    (int)n->start_mark.line + 1 + c->lineoff,
	    (int)n->start_mark.column + 1, what);
}

static json_t *
map_json(struct ctx *c, yaml_node_t *n, int depth)
{
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;
	json_t *obj, *val;
	const char *key;

	obj = json_object();
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	    p++) {
		k = yaml_document_get_node(c->doc, p->key);
		v = yaml_document_get_node(c->doc, p->value);
		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE) {
			node_err(c, k ? k : n, "keys must be plain words");
			goto fail;
		}
		key = (const char *)k->data.scalar.value;
		if (json_object_get(obj, key) != NULL) {
			char m[200];
			snprintf(m, sizeof m, "duplicate key '%.64s'", key);
			node_err(c, k, m);
			goto fail;
		}
		if ((val = node_json(c, v, depth + 1)) == NULL)
			goto fail;
		json_object_set_new(obj, key, val);
		add_pos(c, obj, key, 0, k, v);
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

static json_t *
seq_json(struct ctx *c, yaml_node_t *n, int depth)
{
	yaml_node_item_t *it;
	yaml_node_t *v;
	json_t *arr, *val;

	arr = json_array();
	for (it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++) {
		if ((v = yaml_document_get_node(c->doc, *it)) == NULL ||
		    (val = node_json(c, v, depth + 1)) == NULL) {
			json_decref(arr);
			return NULL;
		}
		add_pos(c, arr, NULL, json_array_size(arr), NULL, v);
		json_array_append_new(arr, val);
	}
	return arr;
}

static json_t *
node_json(struct ctx *c, yaml_node_t *n, int depth)
{
	const char *s;

	if (++c->made > YJ_MAXNODES || depth > YJ_MAXDEPTH) {
		node_err(c, n, "document too large or too deeply nested");
		return NULL;
	}
	switch (n->type) {
	case YAML_SCALAR_NODE:
		s = (const char *)n->data.scalar.value;
		if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			return plain_scalar(s);
		return json_stringn(s, n->data.scalar.length);
	case YAML_MAPPING_NODE:
		return map_json(c, n, depth);
	case YAML_SEQUENCE_NODE:
		return seq_json(c, n, depth);
	default:
		node_err(c, n, "empty node");
		return NULL;
	}
}

/*
 * libyaml's error, as file:line:column: what.  A tab on the line is
 * named: libyaml's words for it ("found character that cannot start
 * any token") do not say that YAML forbids tabs for indentation.
 */
static void
load_err(const yaml_parser_t *p, const char *buf, size_t len, int lineoff,
    const char *file, char *err)
{
	const char *l = buf, *e = buf + len, *t, *nl;
	size_t line, col = 1, n;

	for (line = 0; line < p->problem_mark.line; line++) {
		if ((nl = memchr(l, '\n', (size_t)(e - l))) == NULL)
			break;
		l = nl + 1;
	}
	for (t = l; t < e && *t != '\n' && *t != '\t'; t += n, col++)
		if ((n = utf8_len((const unsigned char *)t,
		    (size_t)(e - t))) == 0)
			n = 1;
	if (p->error == YAML_SCANNER_ERROR && t < e && *t == '\t') {
		errf(err, "%s:%d:%zu: a tab: YAML forbids tabs for "
		    "indentation; indent with spaces", file,
		    (int)line + 1 + lineoff, col);
		return;
	}
	errf(err, "%s:%d:%d: %s%s%s", file,
	    (int)p->problem_mark.line + 1 + lineoff,
	    (int)p->problem_mark.column + 1,
	    p->problem ? p->problem : "not valid YAML",
	    p->context ? " " : "", p->context ? p->context : "");
}

/*
 * Load YAML text `buf' (from `file', whose first line is line
 * lineoff+1) into out.  An empty document gives an empty object.
 */
int
yj_load(const char *buf, size_t len, int lineoff, const char *file,
    struct yj *out, char *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct ctx c = { &doc, out, file, lineoff, 0, err };
	int r = -1;

	memset(out, 0, sizeof *out);
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf,
	    len);
	if (!yaml_parser_load(&parser, &doc)) {
		load_err(&parser, buf, len, lineoff, file, err);
		yaml_parser_delete(&parser);
		return -1;
	}
	if ((root = yaml_document_get_root_node(&doc)) == NULL) {
		out->root = json_object();
		out->nodoc = 1;
	} else
		out->root = node_json(&c, root, 0);
	if (out->root != NULL)
		r = 0;
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (r == -1)
		yj_free(out);
	return r;
}

void
yj_free(struct yj *y)
{
	size_t i;

	for (i = 0; i < y->npos; i++)
		free(y->pos[i].key);
	free(y->pos);
	json_decref(y->root);
	memset(y, 0, sizeof *y);
}

static const struct yj_pos *
find(const struct yj *y, const json_t *parent, const char *key, size_t index)
{
	const struct yj_pos *p;
	size_t i;

	for (i = 0; i < y->npos; i++) {
		p = &y->pos[i];
		if (p->parent == parent && (key == NULL ? p->key == NULL &&
		    p->index == index : p->key != NULL &&
		    strcmp(p->key, key) == 0))
			return p;
	}
	return NULL;
}

/*
 * Where parent[key] is (key NULL: parent's item index), in lc: the
 * line and column of its key with atkey, else of its value; 1 and 1
 * when not known.
 */
void
yj_where(const struct yj *y, const json_t *parent, const char *key,
    size_t index, int atkey, int *lc)
{
	const struct yj_pos *p = find(y, parent, key, index);

	lc[0] = p == NULL ? 1 : atkey ? p->kline : p->vline;
	lc[1] = p == NULL ? 1 : atkey ? p->kcol : p->vcol;
}
