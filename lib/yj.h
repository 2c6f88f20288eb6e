/*
 * yj.h - private to libheart: YAML read into jansson JSON, with the
 * source position of every key and value kept beside the tree so that
 * validation can say file:line:column.
 */
#ifndef YJ_H
#define YJ_H

#include <jansson.h>

struct yj_pos {
	const json_t *parent;	/* object or array holding the item */
	char	*key;		/* object key, or NULL for array items */
	size_t	 index;
	int	 kline, kcol;	/* where the key is */
	int	 vline, vcol;	/* where the value starts */
};

struct yj {
	json_t	*root;
	struct yj_pos *pos;
	size_t	 npos;
};

int	yj_load(const char *, size_t, int, const char *, struct yj *,
	    char *);
void	yj_free(struct yj *);
const struct yj_pos *yj_key(const struct yj *, const json_t *, const char *);
const struct yj_pos *yj_item(const struct yj *, const json_t *, size_t);

#endif
