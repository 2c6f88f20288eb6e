/*
 * mcp.c - fuzz target: what an MCP server sends (lib/mcpserver.c), each
 * input one line read as the answer to request 7 (mcp_message); a
 * result then read both as a tools/list page (mcp_tools) and as a
 * tools/call result (mcp_result), and its text made what the model
 * reads (tool_text).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartwake.h"

static void
as_result(const json_t *res)
{
	char err[HEART_ERRLEN], *out, *text;
	const char *cursor;
	json_t *into = json_array();
	size_t len;
	int iserror;

	if (mcp_tools(res, into, &cursor, err) == 0)
		FZ_ASSERT(json_array_size(into) <=
		    json_array_size(json_object_get(res, "tools")));
	else
		FZ_ASSERT(err[0] != '\0' && json_array_size(into) == 0);
	json_decref(into);
	if (mcp_result(res, &out, &len, &iserror, err) == -1) {
		FZ_ASSERT(err[0] != '\0' && out == NULL);
		return;
	}
	FZ_ASSERT(iserror == 0 || iserror == 1);
	text = tool_text(NULL, out, len, 0);
	FZ_ASSERT(strlen(text) <= 3 * TOOL_MAXOUT + 64);
	FZ_ASSERT(utf8_len((const unsigned char *)text, strlen(text)) > 0 ||
	    text[0] == '\0');
	free(text);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char err[HEART_ERRLEN];
	json_t *msg;
	int kind;

	kind = mcp_message((const char *)data, n, 7, &msg, err);
	if (kind == -1) {
		FZ_ASSERT(err[0] != '\0' && msg == NULL);
		return 0;
	}
	FZ_ASSERT(kind >= MCP_RESULT && kind <= MCP_STRAY);
	FZ_ASSERT((msg != NULL) == (kind == MCP_RESULT || kind == MCP_ERROR ||
	    kind == MCP_REQUEST));
	if (kind == MCP_RESULT)
		as_result(msg);
	json_decref(msg);
	return 0;
}
