/*
 * souljson.c - the effective soul as JSON, as the tests read it
 * (t/soul-dump.c) and the fuzz target checks it prints: the defaults
 * filled in, durations in seconds, what the soul leaves unset null.
 */
#include <stdio.h>

#include "heartint.h"
#include "heartsoul.h"

static json_t *
hours_json(const struct hours *h)
{
	char buf[48];

	if (!h->set)
		return json_null();
	snprintf(buf, sizeof buf, "%02d:%02d-%02d:%02d", h->start / 60,
	    h->start % 60, h->end / 60, h->end % 60);
	return json_string(buf);
}

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *
adapt_conf_json(const struct adapt_conf *a)
{
	if (!a->on)
		return json_null();
	return json_pack("{s:I,s:I,s:I,s:{s:f,s:f,s:f}}", "min",
	    (json_int_t)a->min, "max", (json_int_t)a->max, "window",
	    (json_int_t)a->window, "levels", "low", a->weight[0], "medium",
	    a->weight[1], "high", a->weight[2]);
}

static json_t *
gate_json(const struct chamber_conf *cc)
{
	if (cc->gate == NULL)
		return json_null();
	return json_pack("{s:O,s:I}", "command", cc->gate, "timeout",
	    (json_int_t)cc->gate_timeout);
}

static json_t *
price_conf_json(const struct price *p)
{
	if (!p->set)
		return json_null();
	return json_pack("{s:f,s:f,s:f,s:f}", "input", p->input,
	    "cached_input", p->cached_input, "cache_write", p->cache_write,
	    "output", p->output);
}

static json_t *
cache_json(int cache)
{
	return cache < 0 ? json_null() : json_string(cache == LLM_CACHE_1H ?
	    "1h" : cache == LLM_CACHE_5M ? "5m" : "off");
}

/* llm.triage as written: its unset keys are null (llm's hold) */
static json_t *
endpoint_json(const struct soul_llm *e)
{
	json_t *j = soul_keys_json(M_TRIAGE, e);

	json_object_set(j, "command", e->command ? e->command : json_null());
	json_object_set_new(j, "price", price_conf_json(&e->price));
	json_object_set_new(j, "cache", cache_json(e->cache));
	return j;
}

/* The effective soul, defaults filled in, durations in seconds. */
json_t *
soul_json(const struct soul *s)
{
	const struct chamber_conf *sc = &s->ch[CH_SCHEDULE];
	const struct chamber_conf *ic = &s->ch[CH_IDLE];
	json_t *j;

	j = json_pack("{s:s,s:o,s:s,s:o,s:o,"
	    "s:{s:I,s:o,s:I,s:I,s:o,s:o},s:{s:I,s:o,s:I,s:o,s:o},"
	    "s:o,s:{s:s,s:O,s:s,s:I},s:I,s:o,s:O}",
	    "name", s->name, "system", str_or_null(s->system),
	    "timezone", s->timezone, "daily_cap", s->daily_cap < 0 ?
	    json_null() : json_integer(s->daily_cap),
	    "pulse", soul_keys_json(M_PULSE, s),
	    "schedule", "interval", (json_int_t)sc->every,
	    "prompt", str_or_null(sc->prompt),
	    "daily_cap", (json_int_t)sc->daily_cap,
	    "seed_tool_cap", (json_int_t)sc->seed_tool_cap,
	    "active_hours", hours_json(&sc->active),
	    "checklist", str_or_null(sc->checklist),
	    "idle", "after", (json_int_t)ic->every,
	    "prompt", str_or_null(ic->prompt),
	    "daily_cap", (json_int_t)ic->daily_cap,
	    "active_hours", hours_json(&ic->active),
	    "checklist", str_or_null(ic->checklist),
	    "breaker", soul_keys_json(M_BRK, s),
	    "ghost", "token", s->ghost_token, "also", s->ghost_also,
	    "mode", s->ghost_mode, "ack_max_chars",
	    (json_int_t)s->ghost_ack_max,
	    "history_keep", (json_int_t)s->history_keep,
	    "llm", soul_keys_json(M_LLM, &s->llm),
	    "tools", s->tools ? s->tools : json_null());
	json_object_set_new(json_object_get(j, "schedule"), "adaptive",
	    adapt_conf_json(&s->adapt));
	json_object_set(j, "mcp_servers", s->mcp ? s->mcp : json_null());
	json_object_set_new(json_object_get(j, "schedule"), "gate",
	    gate_json(sc));
	/* null: unset, every missed slot caught up (slot.c); 0: never */
	json_object_set_new(json_object_get(j, "schedule"), "catch_up",
	    s->catch_up < 0 ? json_null() : json_integer(s->catch_up));
	json_object_set_new(json_object_get(j, "idle"), "gate",
	    gate_json(ic));
	json_object_set_new(json_object_get(j, "llm"), "triage",
	    s->triage ? endpoint_json(s->triage) : json_null());
	json_object_set_new(j, "daily_budget", price_json(s->daily_budget));
	json_object_set_new(j, "monthly_budget",
	    price_json(s->monthly_budget));
	/* null: unset, the chambers' defaults (dormant.c); 0: off */
	json_object_set_new(j, "dormant_after", s->dormant_after < 0 ?
	    json_null() : json_integer(s->dormant_after));
	json_object_set_new(json_object_get(j, "llm"), "price",
	    price_conf_json(&s->llm.price));
	json_object_set_new(json_object_get(j, "llm"), "cache",
	    cache_json(s->llm.cache < 0 ? LLM_CACHE_OFF : s->llm.cache));
	return j;
}
