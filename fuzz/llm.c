/*
 * llm.c - fuzz target: the model's replies (llm_parse), each input
 * read as a body of both protocols: OpenAI Chat Completions (also what
 * the command provider prints) and Anthropic Messages; then the text
 * of a reply through ghost mode's idle detection (idle_detect).
 */
#include "fuzz.h"

static struct soul *soul;	/* every default */

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
