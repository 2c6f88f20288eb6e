/*
 * soulfacts.c - what a loaded soul says: to the programs, which do not
 * see struct soul, its name, zone and warnings; beyond its fields, a
 * chamber's name, the soul's directory, whether its triage asks llm's
 * provider, and the price each of its models is at.  Everything that
 * only reads a soul needs this file, never the loader (soul.c).
 */
#include <stdio.h>
#include <string.h>

#include "heartint.h"

static const char *chambers[] = { "schedule", "idle" };

/* The agent's id. */
const char *
soul_name(const struct soul *s)
{
	return s->name;
}

/* Its time zone; NULL when there is no soul (the state's own, then). */
const char *
soul_zone(const struct soul *s)
{
	return s != NULL ? s->timezone : NULL;
}

/* What its load warned of (unknown keys and the like): *n of them. */
char *const *
soul_warnings(const struct soul *s, size_t *n)
{
	*n = s->nwarn;
	return s->warn;
}

const char *
soul_chamber_name(enum chamber c)
{
	return c < CH_NCHAMBERS ? chambers[c] : "?";
}

int
soul_chamber_parse(const char *s, enum chamber *out)
{
	int i;

	for (i = 0; i < CH_NCHAMBERS; i++)
		if (strcmp(s, chambers[i]) == 0) {
			*out = (enum chamber)i;
			return 0;
		}
	return -1;
}

/* The directory of the soul file: tools and checklists are found there. */
void
soul_dir(const struct soul *s, char *buf, size_t n)
{
	const char *slash = strrchr(s->path, '/');

	if (slash == NULL)
		snprintf(buf, n, ".");
	else if (slash == s->path)
		snprintf(buf, n, "/");
	else
		snprintf(buf, n, "%.*s", (int)(slash - s->path), s->path);
}

/* A key of llm.triage (t) that is left out or says what llm's (l) does. */
static int
as_llm(const char *t, const char *l)
{
	return t == NULL || (l != NULL && strcmp(t, l) == 0);
}

/* llm.triage asks llm's provider, so llm's URL, key, command and model
 * are its own where it leaves them out (heart-soul(5)). */
int
soul_triage_same_provider(const struct soul *s)
{
	return s->triage != NULL && as_llm(s->triage->provider,
	    s->llm.provider);
}

/*
 * The price of the main model (triage 0) or of llm.triage (1): its
 * own, else llm's when it asks llm's model (heart-soul(5)); set 0 when
 * there is none.
 */
const struct price *
soul_price(const struct soul *s, int triage)
{
	static const struct price none;
	const struct soul_llm *t = s->triage;

	if (!triage)
		return &s->llm.price;
	if (t == NULL)
		return &none;
	if (t->price.set)
		return &t->price;
	if (soul_triage_same_provider(s) && as_llm(t->model, s->llm.model))
		return &s->llm.price;
	return &none;
}
