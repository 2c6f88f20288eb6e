/*
 * secret.c - the secrets heart holds, and text scrubbed of them.
 *
 * A secret (the model's API key, the Redis password, the MQTT
 * password) is registered with secret_add where heart reads it
 * (llm_conf, redisstore_open, mqtt_password).  Text that came from
 * outside (a provider's error body, a program's standard error, a
 * server's error reply, a tool's output, a model's answer) is scrubbed
 * before it is printed or stored: errf scrubs every message the library
 * writes, secret_dup any other text.  Scrubbed are each secret, its
 * URL-encoded and JSON-escaped forms, and every run of at least
 * SECRET_RUN bytes of one of them (a key cut short, or shown without
 * its first characters); each becomes "[redacted]".  A value shorter
 * than SECRET_MIN bytes cannot be told from ordinary text and is not
 * registered.
 *
 * Invariant: the registry only grows, holds copies (wiped at exit),
 * and an empty registry costs a scrub nothing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartint.h"

#define SECRET_MIN	4
#define SECRET_RUN	12
#define REDACTED	"[redacted]"

struct form {
	char	*s;
	size_t	 len;
	int	 first[256];	/* the first position of each byte, or -1 */
	int	*next;		/* the next position of the same byte */
};

static struct form *forms;
static size_t nforms;

static void
wipe(void)
{
	size_t i;

	for (i = 0; i < nforms; i++) {
		explicit_bzero(forms[i].s, forms[i].len);
		free(forms[i].s);
		free(forms[i].next);
	}
	free(forms);
	forms = NULL;
	nforms = 0;
}

static void
add_form(const char *s, size_t len)
{
	struct form *f;
	size_t i;

	for (i = 0; i < nforms; i++)
		if (forms[i].len == len && memcmp(forms[i].s, s, len) == 0)
			return;
	if (nforms == 0)
		atexit(wipe);
	if ((forms = realloc(forms, (nforms + 1) * sizeof *forms)) == NULL)
		abort();
	f = &forms[nforms++];
	f->s = xcalloc(1, len + 1);
	memcpy(f->s, s, len);
	f->len = len;
	f->next = xcalloc(len, sizeof *f->next);
	memset(f->first, -1, sizeof f->first);
	for (i = len; i-- > 0;) {
		f->next[i] = f->first[(unsigned char)s[i]];
		f->first[(unsigned char)s[i]] = (int)i;
	}
}

/* The value as it sits in a URL: every byte but A-Z a-z 0-9 - . _ ~
 * as %XX, in upper or lower case hex. */
static void
add_urlenc(const char *v, const char *hex)
{
	size_t i, o = 0, len = strlen(v);
	char *e = xcalloc(3, len + 1);

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c) != NULL)
			e[o++] = (char)c;
		else {
			e[o++] = '%';
			e[o++] = hex[c >> 4];
			e[o++] = hex[c & 15];
		}
	}
	add_form(e, o);
	explicit_bzero(e, o);
	free(e);
}

/* The value as it sits in a JSON string. */
static void
add_json(const char *v)
{
	json_t *j = json_string(v);
	char *e;

	if (j == NULL)
		return;		/* not UTF-8: it cannot be in a JSON text */
	e = json_dumps(j, JSON_ENCODE_ANY);
	json_decref(j);
	if (e == NULL)
		return;
	add_form(e + 1, strlen(e) - 2);
	explicit_bzero(e, strlen(e));
	free(e);
}

/* Register a secret value (NULL, or shorter than SECRET_MIN: none). */
void
secret_add(const char *v)
{
	if (v == NULL || strlen(v) < SECRET_MIN)
		return;
	add_form(v, strlen(v));
	add_urlenc(v, "0123456789ABCDEF");
	add_urlenc(v, "0123456789abcdef");
	add_json(v);
}

/* The variables heart reads a password from. */
static const char *const password_vars[] = { "HEART_REDIS_PASSWORD",
    "HEART_MQTT_PASSWORD", NULL };

/* The passwords the environment holds are secrets whichever store or
 * broker this run uses: a program's output may quote one all the
 * same (heart(7), SECRETS). */
void
secret_add_passwords(void)
{
	size_t i;

	for (i = 0; password_vars[i] != NULL; i++)
		secret_add(getenv(password_vars[i]));
}

/* Is entry ("NAME=value") a variable heart reads a password from, or
 * a delivery's own setting (HEART_DELIVER_*, heart-ghost(1))?  No
 * program heart runs needs the store's or the broker's password, and
 * only heart-ghost's delivery program needs the delivery's. */
int
secret_password_var(const char *entry)
{
	const char *const *names = password_vars;
	size_t i, n;

	for (i = 0; names[i] != NULL; i++) {
		n = strlen(names[i]);
		if (strncmp(entry, names[i], n) == 0 && entry[n] == '=')
			return 1;
	}
	return strncmp(entry, "HEART_DELIVER_", 14) == 0;
}

/* Is v a secret heart holds, as it is or in one of its forms?  For a
 * child's environment: a variable whose value is one is not passed. */
int
secret_held(const char *v)
{
	size_t i, len = strlen(v);

	for (i = 0; i < nforms; i++)
		if (forms[i].len == len && memcmp(forms[i].s, v, len) == 0)
			return 1;
	return 0;
}

/* The longest run at p (n bytes left) that is a secret's, or 0. */
static size_t
run_at(const char *p, size_t n)
{
	size_t best = 0, i, k, need;
	int j;

	for (i = 0; i < nforms; i++) {
		const struct form *f = &forms[i];
		need = f->len < SECRET_RUN ? f->len : SECRET_RUN;
		for (j = f->first[(unsigned char)*p]; j >= 0; j = f->next[j]) {
			for (k = 0; k < n && (size_t)j + k < f->len &&
			    p[k] == f->s[j + k]; k++)
				;
			if (k >= need && k > best)
				best = k;
		}
	}
	return best;
}

/*
 * s[0..len) scrubbed into out (at most n - 1 bytes and a NUL; out may
 * be NULL).  Returns the length of the whole scrubbed text.
 */
static size_t
scrub(const char *s, size_t len, char *out, size_t n)
{
	size_t i = 0, o = 0, w = 0, r, k;
	const char *add;
	int full = out == NULL || n == 0;

	while (i < len) {
		if ((r = run_at(s + i, len - i)) > 0) {
			add = REDACTED;
			k = sizeof REDACTED - 1;
			i += r;
		} else {
			add = s + i;
			k = 1;
			i++;
		}
		if (!full && w + k < n) {
			memcpy(out + w, add, k);
			w += k;
		} else
			full = 1;	/* what does not fit is left out */
		o += k;
	}
	if (out != NULL && n > 0)
		out[w] = '\0';
	return o;
}

/* Scrub the string in buf (of size n) in place; the result is cut to
 * fit. */
static void
secret_scrub(char *buf, size_t n)
{
	char *copy;
	size_t len;

	if (nforms == 0 || n == 0)
		return;
	len = strnlen(buf, n - 1);
	copy = xcalloc(1, len + 1);
	memcpy(copy, buf, len);
	scrub(copy, len, buf, n);
	explicit_bzero(copy, len);
	free(copy);
}

/*
 * A message into err (HEART_ERRLEN bytes; NULL: none), scrubbed of
 * every secret (secret_scrub) and made one printable line (text_line):
 * a message quotes text from outside.
 */
void
errf(char *err, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(err, HEART_ERRLEN, fmt, ap);
	va_end(ap);
	secret_scrub(err, HEART_ERRLEN);
	text_line(err, HEART_ERRLEN, err, strlen(err));
}

/* A scrubbed copy of s, to free. */
char *
secret_dup(const char *s)
{
	size_t len, n;
	char *out;

	if (s == NULL)
		return NULL;
	if (nforms == 0)
		return xstrdup(s);
	len = strlen(s);
	n = scrub(s, len, NULL, 0) + 1;
	out = xcalloc(1, n);
	scrub(s, len, out, n);
	return out;
}

/* Every string in j (values, not keys) scrubbed in place: a model's tool
 * calls, whose arguments are the model's text as much as its answer. */
void
secret_json(json_t *j)
{
	const char *k;
	json_t *v;
	size_t i;
	char *clean;

	if (nforms == 0 || j == NULL)
		return;
	if (json_is_string(j)) {
		clean = secret_dup(json_string_value(j));
		json_string_set(j, clean);
		free(clean);
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			secret_json(v);
	} else if (json_is_object(j)) {
		json_object_foreach(j, k, v)
			secret_json(v);
	}
}
