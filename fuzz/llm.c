/*
 * llm.c - fuzz target: the model's replies (llm_parse), each input
 * read as a body of both protocols: OpenAI Chat Completions (also what
 * the command provider prints) and Anthropic Messages; then the text
 * of a reply through ghost mode's idle detection (idle_detect), and
 * its usage through ask.c's bound.
 */
#include "fuzz.h"
#include "heartwake.h"	/* ask.c's bound is the library's own */

static struct soul *soul;	/* every default */

/* The counts read are whole and never wrap; bounded as ask.c bounds
 * them (a request of n bytes), they are within the request. */
static void
bounded(const struct llm_reply *r, size_t n)
{
	struct usage u = r->u;
	char note[384];

	FZ_ASSERT(u.prompt >= 0 && u.prompt <= 3 * LLM_TOKENS_MAX);
	FZ_ASSERT(u.completion >= 0 && u.completion <= LLM_TOKENS_MAX);
	FZ_ASSERT(u.cached >= 0 && u.cache_write >= 0);
	ask_usage_bound(&u, (long long)n, (long long)n, 1024, note,
	    sizeof note);
	FZ_ASSERT(u.prompt <= (long long)n + USAGE_SLACK);
	FZ_ASSERT(u.cached <= u.prompt &&
	    u.cache_write <= u.prompt - u.cached);
	FZ_ASSERT((note[0] != '\0') == (u.prompt != r->u.prompt ||
	    u.completion != r->u.completion || u.cached != r->u.cached ||
	    u.cache_write != r->u.cache_write));
}

static void
one(const char *provider, const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN];
	struct llm_reply r;
	const char *level;

	if (llm_parse(provider, (const char *)data, n, &r, err) == 0) {
		FZ_ASSERT(r.text != NULL);
		FZ_ASSERT(r.tool_calls == NULL ||
		    json_array_size(r.tool_calls) > 0);
		bounded(&r, n);
		if (idle_detect(soul, r.text, &level) == 0)
			FZ_ASSERT(level == NULL);
	} else
		FZ_ASSERT(err[0] != '\0');
	llm_reply_free(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (soul == NULL) {
		soul = soul_new(NULL);
		soul_defaults(soul);
	}
	one("openai", data, n);
	one("anthropic", data, n);
	return 0;
}
