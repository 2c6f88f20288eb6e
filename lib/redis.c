/*
 * redis.c - the Redis store: caps, breakers, wake locks and wake.json
 * of a fleet that spans machines, in one Redis (hiredis).
 *
 * Invariants: every transition is one Lua script run on the server
 * (EVALSHA; loaded once, again on NOSCRIPT), never a read-modify-write
 * from here; the rules are cap.c's and brk.c's, line for line, and
 * "now" is always the caller's clock, never the server's.  Keys carry
 * the agent id in braces (one cluster slot per agent):
 *
 *   heart:{ID}:cap		hash: day, zone, caps; the day only moves
 *				forward; expires 30 days after a change
 *   heart:{ID}:cap:DAY		hash: that local day's counts; expires 3
 *				days after the day
 *   heart:{ID}:breaker		hash: breaker.json's fields, times in
 *				Unix seconds; 30 days after its last wait
 *   heart:{ID}:wake.lock	the wake lock: a holder's token, leased
 *   heart:{ID}:wake		wake.json, whole; written only by the
 *				lock's holder; 30 days
 *
 * A server that cannot be reached fails the call (store_fail:
 * HX_UNAVAILABLE): the caller fails closed.  The connection is made at
 * the first call, and again at the next after one is lost.
 */
#include <sys/file.h>
#include <sys/random.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>

#include "store.h"

#define DAY		86400LL
#define DAYKEEP		(3 * DAY)	/* a day's counts, after the day */
#define KEEP		(30 * DAY)	/* the rest, after a change */
#define TIMEOUT		3		/* s, to connect and per command */
#define MAXARGS		24
#define MAXHELD		8

enum { S_CAP, S_BRK, S_WAKE, NSCRIPTS };

/* cap.c's cap_take, cap_record, cap_peek, cap_reset, roll() included */
static const char cap_lua[] =
"local op, zone, given, today, kday = unpack(ARGV, 1, 5)\n"
"local m = redis.call('HMGET', KEYS[1], 'day', 'zone', 'cap_schedule',\n"
"  'cap_idle', 'cap_agent')\n"
"if given == '' and m[2] and m[2] ~= zone then return {'zone', m[2]} end\n"
"if m[1] and not string.match(m[1], '^%d%d%d%d%-%d%d%-%d%d$') then\n"
"  return redis.error_reply(KEYS[1] .. \": field 'day' is not valid;\"\n"
"    .. ' fix or delete the key by hand')\n"
"end\n"
"local day = today\n"
"if m[1] and m[1] > today then day = m[1] end\n"
"if day ~= kday then return {'day', day} end\n"
"local adm = 0\n"
"if op ~= 'peek' then\n"
"  redis.call('HSET', KEYS[1], 'day', day, 'zone', zone)\n"
"  if op == 'take' then\n"
"    local lim = tonumber(ARGV[9])\n"
"    if ARGV[10] ~= '' then\n"
"      redis.call('HSET', KEYS[1], 'cap_schedule', ARGV[10],\n"
"        'cap_idle', ARGV[11], 'cap_agent', ARGV[12])\n"
"      m[3], m[4], m[5] = ARGV[10], ARGV[11], ARGV[12]\n"
"    elseif m[3] and m[3] ~= '' then\n"
"      local c = 3\n"
"      if ARGV[8] == 'idle' then c = 4 end\n"
"      lim = tonumber(m[c])\n"
"      if ARGV[13] ~= '' then lim = tonumber(ARGV[13]) end\n"
"      local a = tonumber(m[5] or '')\n"
"      if not lim or not a then\n"
"        return redis.error_reply(KEYS[1] .. \": field 'cap_*' is not\"\n"
"          .. ' valid; fix or delete the key by hand')\n"
"      end\n"
"      if a >= 0 and a < lim then lim = a end\n"
"    end\n"
"    local t = tonumber(redis.call('HGET', KEYS[2], 'total') or '0')\n"
"    if not t then\n"
"      return redis.error_reply(KEYS[2] .. \": field 'total' is not\"\n"
"        .. ' valid; fix or delete the key by hand')\n"
"    end\n"
"    if t < lim then\n"
"      redis.call('HINCRBY', KEYS[2], ARGV[8], 1)\n"
"      redis.call('HINCRBY', KEYS[2], 'total', 1)\n"
"      adm = 1\n"
"    end\n"
"  elseif op == 'record' then\n"
"    redis.call('HINCRBY', KEYS[2], 'ghosts', ARGV[8])\n"
"    redis.call('HINCRBY', KEYS[2], 'prompt', ARGV[9])\n"
"    redis.call('HINCRBY', KEYS[2], 'completion', ARGV[10])\n"
"  elseif op == 'reset' then\n"
"    redis.call('DEL', KEYS[2])\n"
"    redis.call('HSET', KEYS[2], 'total', 0)\n"
"  end\n"
"  redis.call('EXPIRE', KEYS[1], ARGV[7])\n"
"  if redis.call('EXISTS', KEYS[2]) == 1 then\n"
"    redis.call('EXPIRE', KEYS[2], ARGV[6])\n"
"  end\n"
"end\n"
"return {'ok', adm, day, zone, m[3] or '', m[4] or '', m[5] or '',\n"
"  redis.call('HGETALL', KEYS[2])}\n";

/* brk.c's brk_check, brk_giveback, brk_record, brk_peek, brk_reset */
static const char brk_lua[] =
"local op, now = ARGV[1], tonumber(ARGV[2])\n"
"local thr, base = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
"local maxc, lease = tonumber(ARGV[5]), tonumber(ARGV[6])\n"
"local pid, host, ttl = tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9])\n"
"local flags, why = tonumber(ARGV[10]), ARGV[11]\n"
"local hold = tonumber(ARGV[12])\n"
"-- ARGV[13]: '1' when the caller gave the soul's keys, else keep ours\n"
"local band, FAILS, CONFIG = bit.band, 10, 16\n"
"local F = {'state', 'llm_fails', 'tool_fails', 'cooldown_s', 'base_s',\n"
"  'until', 'probe_at', 'probe_pid', 'probe_host', 'trigger', 'reason',\n"
"  'threshold', 'max_cooldown_s'}\n"
"local v = redis.call('HMGET', KEYS[1], unpack(F))\n"
"local b, ev, bad = {}, {}, nil\n"
"b.exists = v[1] ~= false\n"
"b.state = v[1] or 'closed'\n"
"if b.state ~= 'closed' and b.state ~= 'open' and\n"
"    b.state ~= 'half_open' then bad = 'state' end\n"
"for _, i in ipairs({2, 3, 4, 5, 6, 7, 8, 12, 13}) do\n"
"  local n = tonumber(v[i] or '0')\n"
"  if not n or n < 0 or n ~= math.floor(n) then bad = bad or F[i] end\n"
"  b[F[i]] = n or 0\n"
"end\n"
"b.probe_host, b.trigger, b.reason = v[9] or '', v[10] or '', v[11] or ''\n"
"if b.trigger ~= '' and b.trigger ~= 'llm' and b.trigger ~= 'tool' then\n"
"  bad = bad or 'trigger'\n"
"end\n"
"if b.state == 'open' and b['until'] == 0 then bad = bad or 'until' end\n"
"if bad then\n"
"  return redis.error_reply(KEYS[1] .. \": field '\" .. bad ..\n"
"    \"' is missing or not valid; fix or delete the key by hand\")\n"
"end\n"
"if b.state ~= 'open' then b['until'] = 0 end\n"
"if ARGV[13] ~= '1' then\n"
"  if b.base_s > 0 then base = b.base_s end\n"
"  if b.threshold > 0 then thr = b.threshold end\n"
"  if b.max_cooldown_s > 0 then maxc = b.max_cooldown_s end\n"
"  if maxc < base then maxc = base end\n"
"end\n"
"local function noprobe() b.probe_at, b.probe_pid, b.probe_host = 0, 0, ''"
" end\n"
"if b.state ~= 'half_open' then noprobe() end\n"
"local function save()\n"
"  local go = 0\n"
"  if b.state == 'open' then go = b['until'] end\n"
"  if b.state == 'half_open' and b.probe_at > 0 then\n"
"    go = b.probe_at + lease\n"
"  end\n"
"  redis.call('HSET', KEYS[1], 'state', b.state, 'llm_fails', b.llm_fails,\n"
"    'tool_fails', b.tool_fails, 'cooldown_s', b.cooldown_s,\n"
"    'base_s', b.base_s, 'until', b['until'], 'probe_at', b.probe_at,\n"
"    'probe_pid', b.probe_pid, 'probe_host', b.probe_host,\n"
"    'trigger', b.trigger, 'reason', b.reason, 'updated', now,\n"
"    'threshold', b.threshold, 'max_cooldown_s', b.max_cooldown_s)\n"
"  redis.call('EXPIRE', KEYS[1], ttl + math.max(0, go - now))\n"
"end\n"
"local function advance()\n"
"  local ch = false\n"
"  if (b.state == 'closed' and b.cooldown_s ~= base) or\n"
"      (b.state ~= 'closed' and b.cooldown_s <= 0) then\n"
"    b.cooldown_s, ch = base, true\n"
"  end\n"
"  if b.state == 'open' and b['until'] - now > b.cooldown_s then\n"
"    b['until'], ch = now + b.cooldown_s, true\n"
"  end\n"
"  if b.state == 'open' and now >= b['until'] then\n"
"    b.state, b['until'], ch = 'half_open', 0, true\n"
"    noprobe()\n"
"    ev[#ev + 1] = 'half_open'\n"
"  end\n"
"  if b.state == 'half_open' and b.probe_at > now then\n"
"    b.probe_at, ch = now, true\n"
"  end\n"
"  if b.state == 'half_open' and b.probe_at > 0 and\n"
"      now >= b.probe_at + lease then\n"
"    noprobe()\n"
"    ch = true\n"
"  end\n"
"  if ARGV[13] == '1' and (b.base_s ~= base or b.threshold ~= thr or\n"
"      b.max_cooldown_s ~= maxc) then\n"
"    b.base_s, b.threshold, b.max_cooldown_s, ch = base, thr, maxc, true\n"
"  end\n"
"  return ch\n"
"end\n"
"local function count()\n"
"  local l, t = b.llm_fails, b.tool_fails\n"
"  if band(flags, 1) ~= 0 then b.llm_fails = 0 end\n"
"  if band(flags, 2) ~= 0 then b.llm_fails = b.llm_fails + 1 end\n"
"  if band(flags, 4) ~= 0 then b.tool_fails = 0 end\n"
"  if band(flags, 8) ~= 0 then b.tool_fails = b.tool_fails + 1 end\n"
"  if band(flags, FAILS) ~= 0 then b.reason = why end\n"
"  return l ~= b.llm_fails or t ~= b.tool_fails\n"
"end\n"
"local function lengthen(t)\n"
"  if t <= b['until'] then return false end\n"
"  b['until'] = t\n"
"  if b.cooldown_s < t - now then b.cooldown_s = t - now end\n"
"  return true\n"
"end\n"
"local function next_cooldown()\n"
"  local cd\n"
"  if band(flags, CONFIG) ~= 0 then return maxc end\n"
"  if b.state == 'closed' or b.cooldown_s <= 0 then cd = base\n"
"  elseif b.cooldown_s > math.floor(maxc / 2) then cd = maxc\n"
"  else cd = b.cooldown_s * 2 end\n"
"  if cd < base then cd = base end\n"
"  return cd\n"
"end\n"
"local function open_now(trig, cd)\n"
"  local from = b.state\n"
"  b.state, b.cooldown_s, b['until'], b.trigger = 'open', cd, now + cd, trig\n"
"  lengthen(hold)\n"
"  noprobe()\n"
"  ev[#ev + 1] = 'open/' .. from\n"
"end\n"
"local function apply()\n"
"  local ch = count()\n"
"  local trig = 'tool'\n"
"  local cd = next_cooldown()\n"
"  if band(flags, 2) ~= 0 then trig = 'llm' end\n"
"  if b.state == 'half_open' then\n"
"    if band(flags, FAILS) ~= 0 then open_now(trig, cd) return true end\n"
"    b.state, b.llm_fails, b.tool_fails = 'closed', 0, 0\n"
"    b.cooldown_s, b['until'], b.trigger = base, 0, ''\n"
"    noprobe()\n"
"    ev[#ev + 1] = 'closed/probe'\n"
"    return true\n"
"  elseif b.state == 'closed' then\n"
"    if band(flags, CONFIG) ~= 0 or b.llm_fails >= thr then\n"
"      open_now('llm', cd)\n"
"    elseif b.tool_fails >= thr then open_now('tool', cd)\n"
"    elseif hold > now then open_now('llm', 0) end\n"
"  elseif b.state == 'open' then\n"
"    if band(flags, CONFIG) ~= 0 and lengthen(now + maxc) then\n"
"      ch = true\n"
"    end\n"
"    if lengthen(hold) then ch = true end\n"
"  end\n"
"  return ch or band(flags, FAILS) ~= 0\n"
"end\n"
"local probe = 0\n"
"if op == 'check' then\n"
"  local need = (b.state == 'open' and (now >= b['until'] or\n"
"    b.cooldown_s <= 0 or b['until'] - now > b.cooldown_s)) or\n"
"    (b.state == 'half_open' and (b.probe_at == 0 or b.probe_at > now or\n"
"    now >= b.probe_at + lease))\n"
"  if need then\n"
"    local ch = advance()\n"
"    if b.state == 'half_open' and b.probe_at == 0 then\n"
"      b.probe_at, b.probe_pid, b.probe_host = now, pid, host\n"
"      probe, ch = 1, true\n"
"    end\n"
"    if ch then save() end\n"
"  end\n"
"elseif op == 'giveback' then\n"
"  if b.state == 'half_open' and b.probe_at ~= 0 and (b.probe_pid == 0 or\n"
"      (b.probe_pid == pid and b.probe_host == host)) then\n"
"    noprobe()\n"
"    save()\n"
"  end\n"
"elseif op == 'record' then\n"
"  local ch = advance()\n"
"  if apply() or ch or not b.exists then save() end\n"
"elseif op == 'peek' then\n"
"  advance()\n"
"elseif op == 'reset' and b.exists then\n"
"  if b.state ~= 'closed' then ev[#ev + 1] = 'closed/reset' end\n"
"  b.state, b.llm_fails, b.tool_fails = 'closed', 0, 0\n"
"  if b.base_s > 0 then b.cooldown_s = b.base_s end\n"
"  b['until'], b.trigger, b.reason = 0, '', ''\n"
"  noprobe()\n"
"  save()\n"
"end\n"
"local ex = 0\n"
"if b.exists then ex = 1 end\n"
"return {ev, b.state, b.llm_fails, b.tool_fails, b.cooldown_s, b.base_s,\n"
"  b['until'], b.probe_at, b.probe_pid, b.probe_host, b.trigger,\n"
"  b.reason, ex, probe, b.threshold, b.max_cooldown_s}\n";

/* the wake lock (KEYS[1]) and the document it guards (KEYS[2]) */
static const char wake_lua[] =
"local op, token = ARGV[1], ARGV[2]\n"
"if op == 'lock' then\n"
"  if redis.call('SET', KEYS[1], token, 'NX', 'PX', ARGV[3]) then\n"
"    return 1\n"
"  end\n"
"  return 0\n"
"elseif op == 'unlock' then\n"
"  if redis.call('GET', KEYS[1]) == token then\n"
"    return redis.call('DEL', KEYS[1])\n"
"  end\n"
"  return 0\n"
"end\n"
"if token ~= '' and redis.call('GET', KEYS[1]) ~= token then\n"
"  return redis.error_reply('the wake lock was lost: its lease of ' ..\n"
"    ARGV[5] .. 's ran out')\n"
"end\n"
"redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4])\n"
"return 1\n";

static struct {
	const char *text;
	char	 sha[41];
} scripts[NSCRIPTS] = { { cap_lua, "" }, { brk_lua, "" }, { wake_lua, "" } };

static struct {
	char	 url[512];	/* as given; it never holds a password */
	char	 host[256];
	int	 port;
	long long db;
	char	 me[128];	/* host name, for the probe and the tokens */
	redisContext *c;
} rs;

static struct {
	int	 fd;
	char	 agent[HEART_IDMAX + 1];
	char	 name[32];
	char	 token[192];
} held[MAXHELD];

static struct store_ops ops;

struct args {
	int	 n;
	const char *v[MAXARGS];
	size_t	 len[MAXARGS];
	char	 buf[MAXARGS][32];
};

static void
aput(struct args *a, const char *s)
{
	a->len[a->n] = strlen(s);
	a->v[a->n++] = s;
}

static void
anum(struct args *a, long long x)
{
	snprintf(a->buf[a->n], sizeof a->buf[a->n], "%lld", x);
	aput(a, a->buf[a->n]);
}

static void
disconnect(void)
{
	if (rs.c != NULL)
		redisFree(rs.c);
	rs.c = NULL;
}

/*
 * An error reply, as a message and an exit code: a server that is
 * there but will not serve now is unreachable; one that refuses us
 * is misconfigured; anything else is a state error.
 */
static void
reply_error(const redisReply *r, const char *what, char *err)
{
	static const char *down[] = { "LOADING", "BUSY", "MASTERDOWN",
	    "MISCONF", "READONLY", "TRYAGAIN", "CLUSTERDOWN", NULL };
	int i;

	/* Redis 7 answers a long command before AUTH with a protocol error */
	if (strncmp(r->str, "NOAUTH", 6) == 0 ||
	    strstr(r->str, "unauthenticated") != NULL) {
		errf(err, "%s: the server wants a password: set "
		    "HEART_REDIS_PASSWORD", rs.url);
		store_fail(HX_CONFIG);
		return;
	}
	if (strncmp(r->str, "WRONGPASS", 9) == 0 ||
	    strstr(r->str, "invalid password") != NULL ||
	    strstr(r->str, "no password is set") != NULL) {
		errf(err, "%s: the password was refused: %.200s", rs.url,
		    r->str);
		store_fail(HX_CONFIG);
		return;
	}
	if (strncmp(r->str, "heart:{", 7) == 0)	/* a script's: it names
						   the key */
		errf(err, "%s: %.400s", rs.url, r->str);
	else
		errf(err, "%s: %s: %.300s", rs.url, what, r->str);
	for (i = 0; down[i] != NULL; i++)
		if (strncmp(r->str, down[i], strlen(down[i])) == 0)
			store_fail(HX_UNAVAILABLE);
}

/* A command's reply, or NULL with err: the connection is then gone. */
static redisReply *
command(struct args *a, const char *what, char *err)
{
	redisReply *r;

	r = redisCommandArgv(rs.c, a->n, a->v, a->len);
	if (r == NULL) {
		errf(err, "%s: %s: connection lost: %s", rs.url, what,
		    rs.c->errstr[0] ? rs.c->errstr : strerror(errno));
		store_fail(HX_UNAVAILABLE);
		disconnect();
	}
	return r;
}

/* A command whose reply must be OK (AUTH, SELECT); -1 with err. */
static int
command_ok(struct args *a, const char *what, char *err)
{
	redisReply *r;
	int ok;

	if ((r = command(a, what, err)) == NULL)
		return -1;
	ok = r->type != REDIS_REPLY_ERROR;
	if (!ok) {
		reply_error(r, what, err);
		if (strcmp(what, "SELECT") == 0)
			store_fail(HX_CONFIG);
	}
	freeReplyObject(r);
	if (!ok)
		disconnect();
	return ok ? 0 : -1;
}

static int
connect_now(char *err)
{
	struct timeval tv = { TIMEOUT, 0 };
	const char *pw = getenv("HEART_REDIS_PASSWORD");
	struct args a;

	if (rs.c != NULL && rs.c->err == 0)
		return 0;
	disconnect();
	rs.c = redisConnectWithTimeout(rs.host, rs.port, tv);
	if (rs.c == NULL || rs.c->err) {
		errf(err, "%s: cannot connect: %s", rs.url, rs.c != NULL ?
		    rs.c->errstr : "out of memory");
		store_fail(HX_UNAVAILABLE);
		disconnect();
		return -1;
	}
	redisSetTimeout(rs.c, tv);
	if (pw != NULL && *pw != '\0') {
		a.n = 0;
		aput(&a, "AUTH");
		aput(&a, pw);
		if (command_ok(&a, "AUTH", err) == -1)
			return -1;
	}
	if (rs.db != 0) {
		a.n = 0;
		aput(&a, "SELECT");
		anum(&a, rs.db);
		if (command_ok(&a, "SELECT", err) == -1)
			return -1;
	}
	return 0;
}

/* Each call starts clean: a failure says what it asks for. */
static int
begin(char *err)
{
	store_fail(0);
	return connect_now(err);
}

/*
 * Run script s with a (keys first, nkeys of them).  The reply, or
 * NULL with err.  A server that lost the script (a restart, SCRIPT
 * FLUSH) is given it again, once.
 */
static redisReply *
eval(int s, int nkeys, const struct args *in, const char *what, char *err)
{
	char sha[41];
	struct args a;
	redisReply *r;
	int i, tries;

	for (tries = 0; tries < 2; tries++) {
		a.n = 0;
		aput(&a, "EVALSHA");
		aput(&a, scripts[s].sha);
		anum(&a, nkeys);
		for (i = 0; i < in->n && a.n < MAXARGS; i++) {
			a.v[a.n] = in->v[i];
			a.len[a.n++] = in->len[i];
		}
		if ((r = command(&a, what, err)) == NULL)
			return NULL;
		if (r->type != REDIS_REPLY_ERROR ||
		    strncmp(r->str, "NOSCRIPT", 8) != 0 || tries > 0)
			break;
		freeReplyObject(r);
		a.n = 0;
		aput(&a, "SCRIPT");
		aput(&a, "LOAD");
		aput(&a, scripts[s].text);
		if ((r = command(&a, what, err)) == NULL)
			return NULL;
		snprintf(sha, sizeof sha, "%s", r->type == REDIS_REPLY_STRING ?
		    r->str : "");
		if (r->type == REDIS_REPLY_ERROR)
			reply_error(r, "SCRIPT LOAD", err);
		else if (strcmp(sha, scripts[s].sha) != 0)
			errf(err, "%s: SCRIPT LOAD: the server named the "
			    "script %s, not %s", rs.url, sha, scripts[s].sha);
		if (r->type == REDIS_REPLY_ERROR ||
		    strcmp(sha, scripts[s].sha) != 0) {
			freeReplyObject(r);
			return NULL;
		}
		freeReplyObject(r);
	}
	if (r->type == REDIS_REPLY_ERROR) {
		reply_error(r, what, err);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

static const char *
rstr(const redisReply *r)
{
	if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
		return r->str;
	return NULL;
}

/* An integer reply, or a string of digits; -1 if neither. */
static int
rnum(const redisReply *r, long long *v)
{
	if (r->type == REDIS_REPLY_INTEGER) {
		*v = r->integer;
		return *v >= 0 ? 0 : -1;
	}
	if (r->type != REDIS_REPLY_STRING)
		return -1;
	return num_parse(r->str, 0, (long long)1 << 53, v);
}

/* The agent of a state directory agents/ID. */
static const char *
agent_of(const char *dir, char *err)
{
	const char *p = strrchr(dir, '/');

	p = p != NULL ? p + 1 : dir;
	if (!id_valid(p)) {
		errf(err, "invalid agent id");
		return NULL;
	}
	return p;
}

static int
check_id(const char *agent, char *err)
{
	if (id_valid(agent))
		return 0;
	errf(err, "invalid agent id");
	return -1;
}

/* Days since the epoch of a date YYYY-MM-DD. */
static long long
day_number(const char *d)
{
	struct tm tm;

	memset(&tm, 0, sizeof tm);
	if (strptime(d, "%Y-%m-%d", &tm) == NULL)
		return 0;
	return (long long)timegm(&tm) / DAY;
}

/* Fill v's counts from a day's HGETALL. */
static int
cap_counts(const redisReply *h, const char *key, struct cap_view *v,
    char *err)
{
	enum chamber c;
	const char *f;
	long long n, *to;
	size_t i;

	for (i = 0; h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements;
	    i += 2) {
		if ((f = rstr(h->element[i])) == NULL)
			continue;
		to = strcmp(f, "total") == 0 ? &v->total :
		    strcmp(f, "ghosts") == 0 ? &v->ghosts :
		    strcmp(f, "prompt") == 0 ? &v->prompt_tokens :
		    strcmp(f, "completion") == 0 ? &v->completion_tokens :
		    NULL;
		if (to == NULL && chamber_parse(f, &c) == 0)
			to = &v->used[c];
		if (to == NULL)
			continue;
		if (rnum(h->element[i + 1], &n) == -1) {
			errf(err, "%s: %s: field '%s' is not valid; fix or "
			    "delete the key by hand", rs.url, key, f);
			return -1;
		}
		*to = n;
	}
	return 0;
}

/* The caps stored with the last take, or the defaults. */
static int
cap_caps(redisReply **e, struct cap_view *v)
{
	long long s, i, a;

	cap_defaults(&v->caps);
	if (rstr(e[0]) == NULL || *rstr(e[0]) == '\0')
		return 0;
	if (rnum(e[0], &s) == -1 || rnum(e[1], &i) == -1 ||
	    (num_parse(rstr(e[2]) ? rstr(e[2]) : "", -1, (long long)1 << 53,
	    &a) == -1))
		return -1;
	v->caps.chamber[CH_SCHEDULE] = s;
	v->caps.chamber[CH_IDLE] = i;
	v->caps.agent = a;
	v->have_caps = 1;
	return 0;
}

static int
cap_reply(redisReply *r, const char *agent, const char *dk,
    int *admitted, struct cap_view *v, char *err)
{
	char key[128];
	long long adm;

	memset(v, 0, sizeof *v);
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 8 ||
	    rnum(r->element[1], &adm) == -1 || rstr(r->element[2]) == NULL ||
	    rstr(r->element[3]) == NULL) {
		errf(err, "%s: the cap script answered nonsense", rs.url);
		return -1;
	}
	snprintf(v->day, sizeof v->day, "%s", rstr(r->element[2]));
	snprintf(v->zone, sizeof v->zone, "%s", rstr(r->element[3]));
	if (cap_caps(r->element + 4, v) == -1) {
		snprintf(key, sizeof key, "heart:{%s}:cap", agent);
		errf(err, "%s: %s: field 'cap_*' is not valid; fix or delete "
		    "the key by hand", rs.url, key);
		return -1;
	}
	if (cap_counts(r->element[7], dk, v, err) == -1)
		return -1;
	if (admitted != NULL)
		*admitted = adm == 1;
	return 0;
}

static int
cap_args(struct args *a, enum cap_op op, const struct cap_args *ca)
{
	static const char *names[] = { "take", "record", "peek", "reset" };
	struct caps in;
	long long l;

	a->v[2] = names[op];
	a->len[2] = strlen(names[op]);
	if (op == CAP_TAKE) {
		/* the caps given, else the defaults when none are kept */
		if (ca->caps != NULL)
			in = *ca->caps;
		else
			cap_defaults(&in);
		if (ca->chcap >= 0)
			in.chamber[ca->ch] = ca->chcap;
		l = cap_limit(&in, ca->ch);
		aput(a, chamber_name(ca->ch));
		anum(a, l);
		if (ca->caps != NULL) {
			anum(a, ca->caps->chamber[CH_SCHEDULE]);
			anum(a, ca->caps->chamber[CH_IDLE]);
			anum(a, ca->caps->agent < 0 ? -1 : ca->caps->agent);
		} else {
			aput(a, "");
			aput(a, "");
			aput(a, "");
		}
		if (ca->chcap >= 0)
			anum(a, ca->chcap);
		else
			aput(a, "");
	} else if (op == CAP_RECORD) {
		anum(a, ca->ghost != 0);
		anum(a, ca->ptok > 0 ? ca->ptok : 0);
		anum(a, ca->ctok > 0 ? ca->ctok : 0);
	}
	return 0;
}

/*
 * The counter: the client names the day it believes in (today in the
 * zone given, else the stored zone, else the machine's); the script
 * checks that belief and, if the stored zone or a later stored day
 * says otherwise, tells us, and we ask again.
 */
static int
rcap(const char *agent, enum cap_op op, const struct cap_args *ca,
    const char *zone, time_t now, int *admitted, struct cap_view *v,
    char *err)
{
	char zused[64], today[16], kday[16], meta[96], dk[112];
	long long ttl, ahead;
	const char *what, *x;
	redisReply *r;
	struct args a;
	int tries, rc = -1;

	if (check_id(agent, err) == -1 || begin(err) == -1)
		return -1;
	snprintf(zused, sizeof zused, "%s", zone != NULL ? zone :
	    tz_local());
	clock_day(zused, now, today, sizeof today);
	snprintf(kday, sizeof kday, "%s", today);
	snprintf(meta, sizeof meta, "heart:{%s}:cap", agent);
	for (tries = 0; tries < 4; tries++) {
		snprintf(dk, sizeof dk, "heart:{%s}:cap:%s", agent, kday);
		ahead = day_number(kday) - day_number(today);
		ttl = clock_next_midnight(zused, now) - now + DAYKEEP +
		    (ahead > 0 ? ahead * DAY : 0);
		a.n = 0;
		aput(&a, meta);
		aput(&a, dk);
		aput(&a, "");
		aput(&a, zused);
		aput(&a, zone != NULL ? zone : "");
		aput(&a, today);
		aput(&a, kday);
		anum(&a, ttl);
		anum(&a, KEEP);
		cap_args(&a, op, ca);
		if ((r = eval(S_CAP, 2, &a, meta, err)) == NULL)
			return -1;
		what = r->type == REDIS_REPLY_ARRAY && r->elements >= 2 ?
		    rstr(r->element[0]) : NULL;
		x = what != NULL ? rstr(r->element[1]) : NULL;
		if (what != NULL && strcmp(what, "zone") == 0 && x != NULL) {
			if (!tz_valid(x)) {
				errf(err, "%s: %s: field 'zone' is not valid; "
				    "fix or delete the key by hand", rs.url,
				    meta);
				freeReplyObject(r);
				return -1;
			}
			snprintf(zused, sizeof zused, "%s", x);
			clock_day(zused, now, today, sizeof today);
			snprintf(kday, sizeof kday, "%s", today);
		} else if (what != NULL && strcmp(what, "day") == 0 &&
		    x != NULL)
			snprintf(kday, sizeof kday, "%s", x);
		else {
			rc = cap_reply(r, agent, dk, admitted, v, err);
			freeReplyObject(r);
			return rc;
		}
		freeReplyObject(r);
	}
	errf(err, "%s: %s: the day kept moving under us; try again", rs.url,
	    meta);
	return rc;
}

static int
brk_state(const char *s, enum brk_state *st)
{
	int i;

	for (i = 0; i <= BRK_HALF_OPEN; i++)
		if (strcmp(s, brk_state_name((enum brk_state)i)) == 0) {
			*st = (enum brk_state)i;
			return 0;
		}
	return -1;
}

static int
brk_reply(const redisReply *r, struct brk_out *o, char *err)
{
	long long n[8], ex, probe;
	const redisReply *ev;
	const char *s;
	size_t i;

	memset(o, 0, sizeof *o);
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 16 ||
	    rnum(r->element[14], &o->b.threshold) == -1 ||
	    rnum(r->element[15], &o->b.max) == -1)
		goto bad;
	ev = r->element[0];
	for (i = 0; i < 7; i++)
		if (rnum(r->element[2 + i], &n[i]) == -1)
			goto bad;
	if (rnum(r->element[12], &ex) == -1 ||
	    rnum(r->element[13], &probe) == -1 ||
	    (s = rstr(r->element[1])) == NULL ||
	    brk_state(s, &o->b.state) == -1 ||
	    ev->type != REDIS_REPLY_ARRAY)
		goto bad;
	for (i = 9; i < 12; i++)
		if (rstr(r->element[i]) == NULL)
			goto bad;
	o->b.llm_fails = n[0];
	o->b.tool_fails = n[1];
	o->b.cooldown = n[2];
	o->b.base = n[3];
	o->b.until = (time_t)n[4];
	o->b.probe_at = (time_t)n[5];
	o->b.probe_pid = n[6];
	snprintf(o->b.probe_host, sizeof o->b.probe_host, "%s",
	    rstr(r->element[9]));
	snprintf(o->b.trigger, sizeof o->b.trigger, "%s",
	    rstr(r->element[10]));
	text_line(o->b.reason, sizeof o->b.reason, rstr(r->element[11]),
	    strlen(rstr(r->element[11])));
	o->b.exists = ex == 1;
	o->probe = probe == 1;
	for (i = 0; i < ev->elements && i < STORE_MAXEV; i++)
		if ((s = rstr(ev->element[i])) != NULL)
			snprintf(o->ev[o->nev++], sizeof o->ev[0], "%s", s);
	return 0;
bad:
	errf(err, "%s: the breaker script answered nonsense", rs.url);
	return -1;
}

static int
rbrk(const char *agent, enum brk_op op, const struct brk_conf *c,
    time_t now, const struct brk_rec *rec, struct brk_out *o, char *err)
{
	static const char *names[] = { "check", "giveback", "record", "peek",
	    "reset" };
	struct brk_conf d;
	char key[96];
	redisReply *r;
	struct args a;
	int rc;

	if (check_id(agent, err) == -1 || begin(err) == -1)
		return -1;
	/* no keys given: the script goes by those kept, else these */
	brk_from_soul(NULL, &d);
	if (c == NULL)
		c = &d;
	snprintf(key, sizeof key, "heart:{%s}:breaker", agent);
	a.n = 0;
	aput(&a, key);
	aput(&a, names[op]);
	anum(&a, (long long)now);
	anum(&a, c->threshold);
	anum(&a, c->cooldown);
	anum(&a, c->max_cooldown);
	anum(&a, BRK_PROBE_LEASE);
	anum(&a, (long long)getpid());
	aput(&a, rs.me);
	anum(&a, KEEP);
	anum(&a, rec->flags);
	aput(&a, rec->reason != NULL ? rec->reason : "");
	anum(&a, (long long)rec->hold);
	aput(&a, c != &d ? "1" : "");
	if ((r = eval(S_BRK, 1, &a, key, err)) == NULL)
		return -1;
	rc = brk_reply(r, o, err);
	freeReplyObject(r);
	return rc;
}

/* Our token for a lock: host, pid and a random number. */
static void
make_token(char *buf, size_t n)
{
	unsigned int x = 0;

	if (getrandom(&x, sizeof x, GRND_NONBLOCK) != sizeof x)
		x = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	snprintf(buf, n, "%s:%ld:%08x", rs.me, (long)getpid(), x);
}

static int
wake_call(const char *agent, const char *op, const char *name,
    const char *token, const char *doc, char *err)
{
	char lock[96], key[112], base[64];
	redisReply *r;
	struct args a;
	long long got;
	int rc;

	snprintf(base, sizeof base, "%s", name);
	if (strlen(base) > 5 && strcmp(base + strlen(base) - 5, ".json") == 0)
		base[strlen(base) - 5] = '\0';
	/* a document is guarded by the agent's wake lock */
	snprintf(key, sizeof key, "heart:{%s}:%s", agent, base);
	snprintf(lock, sizeof lock, "heart:{%s}:%s", agent,
	    strcmp(op, "put") == 0 ? "wake.lock" : base);
	a.n = 0;
	aput(&a, lock);
	aput(&a, key);
	aput(&a, op);
	aput(&a, token);
	if (strcmp(op, "lock") == 0)
		anum(&a, STORE_WAKE_LEASE * 1000LL);
	else if (doc != NULL) {
		aput(&a, doc);
		anum(&a, KEEP);
		anum(&a, STORE_WAKE_LEASE);
	}
	if ((r = eval(S_WAKE, 2, &a, key, err)) == NULL)
		return -1;
	rc = rnum(r, &got) == 0 ? (int)got : 0;
	freeReplyObject(r);
	return rc;
}

static int
held_slot(int fd)
{
	int i;

	for (i = 0; i < MAXHELD; i++)
		if (held[i].agent[0] != '\0' && held[i].fd == fd)
			return i;
	return -1;
}

static const char *
held_token(const char *agent)
{
	int i;

	for (i = 0; i < MAXHELD; i++)
		if (strcmp(held[i].agent, agent) == 0)
			return held[i].token;
	return "";
}

/*
 * The wake lock: the local one first (a chat front end on this host
 * may hold it with flock(1)), then the fleet's, a leased token.
 */
static int
rlock(const char *dir, const char *name, int flags, char *err)
{
	const struct timespec nap = { 0, 100 * 1000 * 1000 };
	char token[192];
	const char *agent;
	int fd, got, i;

	if ((agent = agent_of(dir, err)) == NULL)
		return -1;
	if ((fd = state_lock(dir, name, flags, err)) < 0)
		return fd;
	make_token(token, sizeof token);
	for (i = 0; i < MAXHELD && held[i].agent[0] != '\0'; i++)
		;
	for (;;) {
		if (i == MAXHELD) {
			errf(err, "%s: too many wake locks held", rs.url);
			got = -1;
		} else if (begin(err) == -1)
			got = -1;
		else
			got = wake_call(agent, "lock", name, token, NULL, err);
		if (got != 0 || (flags & LOCK_NB))
			break;
		nanosleep(&nap, NULL);
	}
	if (got != 1) {
		state_unlock(fd);
		return got == 0 ? -2 : -1;
	}
	held[i].fd = fd;
	snprintf(held[i].agent, sizeof held[i].agent, "%s", agent);
	snprintf(held[i].name, sizeof held[i].name, "%s", name);
	snprintf(held[i].token, sizeof held[i].token, "%s", token);
	return fd;
}

/* Let go of a wake lock; a server gone by now lets the lease do it. */
static void
runlock(int fd)
{
	char err[HEART_ERRLEN];
	int i;

	if ((i = held_slot(fd)) >= 0) {
		if (begin(err) == 0)
			wake_call(held[i].agent, "unlock", held[i].name,
			    held[i].token, NULL, err);
		held[i].agent[0] = '\0';
	}
	state_unlock(fd);
}

static int
rread(const char *dir, const char *name, json_t **out, char *err)
{
	char key[112], base[64];
	const char *agent;
	json_error_t je;
	redisReply *r;
	struct args a;

	*out = NULL;
	if ((agent = agent_of(dir, err)) == NULL || begin(err) == -1)
		return -1;
	snprintf(base, sizeof base, "%s", name);
	if (strlen(base) > 5 && strcmp(base + strlen(base) - 5, ".json") == 0)
		base[strlen(base) - 5] = '\0';
	snprintf(key, sizeof key, "heart:{%s}:%s", agent, base);
	a.n = 0;
	aput(&a, "GET");
	aput(&a, key);
	if ((r = command(&a, key, err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_ERROR)
		reply_error(r, key, err);
	else if (r->type == REDIS_REPLY_STRING &&
	    (*out = json_loadb(r->str, r->len, JSON_REJECT_DUPLICATES,
	    &je)) == NULL)
		errf(err, "%s: %s: not valid JSON: %s; fix or delete the key "
		    "by hand", rs.url, key, je.text);
	else if (*out != NULL && !json_is_object(*out)) {
		errf(err, "%s: %s: not a JSON object; fix or delete the key "
		    "by hand", rs.url, key);
		json_decref(*out);
		*out = NULL;
	} else {
		freeReplyObject(r);
		return 0;
	}
	freeReplyObject(r);
	return -1;
}

static int
rwrite(const char *dir, const char *name, const json_t *j, char *err)
{
	const char *agent;
	char *s;
	int r;

	if ((agent = agent_of(dir, err)) == NULL || begin(err) == -1)
		return -1;
	if ((s = json_dumps(j, JSON_COMPACT)) == NULL) {
		errf(err, "%s: cannot encode JSON", name);
		return -1;
	}
	r = wake_call(agent, "put", name, held_token(agent), s, err);
	free(s);
	return r == 1 ? 0 : -1;
}

static int
cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the agent of key k (heart:{ID}:...) to the list. */
static void
add_agent(const char *k, char ***list, size_t *n)
{
	char id[HEART_IDMAX + 1];
	const char *e;

	if (strncmp(k, "heart:{", 7) != 0 || (e = strstr(k, "}:")) == NULL ||
	    e - (k + 7) > HEART_IDMAX)
		return;
	snprintf(id, sizeof id, "%.*s", (int)(e - (k + 7)), k + 7);
	if (!id_valid(id))
		return;
	if ((*list = realloc(*list, (*n + 1) * sizeof **list)) == NULL)
		abort();
	(*list)[(*n)++] = xstrdup(id);
}

static int
ragents(char ***listo, size_t *no, char *err)
{
	char cursor[32] = "0";
	char **list = NULL;
	size_t n = 0, i, j;
	redisReply *r, *keys;
	struct args a;

	*listo = NULL;
	*no = 0;
	if (begin(err) == -1)
		return -1;
	do {
		a.n = 0;
		aput(&a, "SCAN");
		aput(&a, cursor);
		aput(&a, "MATCH");
		aput(&a, "heart:{*}:*");
		aput(&a, "COUNT");
		aput(&a, "1000");
		if ((r = command(&a, "SCAN", err)) == NULL) {
			state_free_list(list, n);
			return -1;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    rstr(r->element[0]) == NULL) {
			if (r->type == REDIS_REPLY_ERROR)
				reply_error(r, "SCAN", err);
			else
				errf(err, "%s: SCAN: a reply not understood",
				    rs.url);
			freeReplyObject(r);
			state_free_list(list, n);
			return -1;
		}
		snprintf(cursor, sizeof cursor, "%s", rstr(r->element[0]));
		keys = r->element[1];
		for (i = 0; keys->type == REDIS_REPLY_ARRAY &&
		    i < keys->elements; i++)
			if (rstr(keys->element[i]) != NULL)
				add_agent(rstr(keys->element[i]), &list, &n);
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	if (n > 0)
		qsort(list, n, sizeof *list, cmpstr);
	for (i = j = 0; i < n; i++) {
		if (j > 0 && strcmp(list[j - 1], list[i]) == 0)
			free(list[i]);
		else
			list[j++] = list[i];
	}
	*listo = list;
	*no = j;
	return 0;
}

/* Has agent keys of its own: a counter, a breaker or a wake.json? */
static int
rknown(const char *agent, char *err)
{
	char k[3][96];
	const char *what[] = { "cap", "breaker", "wake" };
	redisReply *r;
	struct args a;
	int i, rc = -1;

	if (check_id(agent, err) == -1 || begin(err) == -1)
		return -1;
	a.n = 0;
	aput(&a, "EXISTS");
	for (i = 0; i < 3; i++) {
		snprintf(k[i], sizeof k[i], "heart:{%s}:%s", agent, what[i]);
		aput(&a, k[i]);
	}
	if ((r = command(&a, "EXISTS", err)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_INTEGER)
		rc = r->integer > 0;
	else if (r->type == REDIS_REPLY_ERROR)
		reply_error(r, "EXISTS", err);
	else
		errf(err, "%s: EXISTS: a reply not understood", rs.url);
	freeReplyObject(r);
	return rc;
}

/* At exit: let go of the wake locks still held, and the connection. */
static void
rclose(void)
{
	int i;

	for (i = 0; i < MAXHELD; i++)
		if (held[i].agent[0] != '\0')
			runlock(held[i].fd);
	disconnect();
}

/* redis://HOST[:PORT][/DB], HOST a name, an IPv4 or an [IPv6] address */
static int
parse_url(const char *u, char *err)
{
	const char *p, *h, *e;
	long long port = 6379, db = 0;
	char num[32], why[64];

	if (strncmp(u, "rediss://", 9) == 0) {
		errf(err, "rediss:// (TLS) needs hiredis 1.0 or later with "
		    "hiredis_ssl, and this build has hiredis %d.%d (Debian "
		    "12) without it: reach Redis through a tunnel (stunnel, "
		    "spiped, WireGuard) on a local port, with redis://",
		    HIREDIS_MAJOR, HIREDIS_MINOR);
		return -1;
	}
	if (strncmp(u, "redis://", 8) != 0) {
		errf(err, "'%.200s' is not a store: use redis://host:port[/db]"
		    ", or file", u);
		return -1;
	}
	p = u + 8;
	if (strchr(p, '@') != NULL) {
		errf(err, "a user or password does not belong in the store's "
		    "URL (it would show in ps(1) and in logs): set "
		    "HEART_REDIS_PASSWORD");
		return -1;
	}
	if (*p == '[') {
		h = p + 1;
		if ((e = strchr(h, ']')) == NULL)
			goto bad;
		p = e + 1;
	} else {
		h = p;
		e = p + strcspn(p, ":/");
		p = e;
	}
	if (e == h || (size_t)(e - h) >= sizeof rs.host ||
	    strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789.-_:%") < (size_t)(e - h))
		goto bad;
	snprintf(rs.host, sizeof rs.host, "%.*s", (int)(e - h), h);
	if (*p == ':') {
		e = p + 1 + strcspn(p + 1, "/");
		snprintf(num, sizeof num, "%.*s", (int)(e - p - 1), p + 1);
		if (e - p - 1 == 0 || e - p - 1 >= (long)sizeof num)
			goto bad;
		if (num_parse(num, 1, 65535, &port) == -1) {
			errf(err, "'%.200s': not a store URL: port %s: %s", u,
			    num, num_why(num, 1, 65535, why, sizeof why));
			return -1;
		}
		p = e;
	}
	if (*p == '/' && p[1] != '\0' &&
	    num_parse(p + 1, 0, 1 << 30, &db) == -1) {
		errf(err, "'%.200s': not a store URL: database %.40s: %s", u,
		    p + 1, num_why(p + 1, 0, 1 << 30, why, sizeof why));
		return -1;
	}
	if (*p != '\0' && *p != '/')
		goto bad;
	rs.port = (int)port;
	rs.db = db;
	snprintf(rs.url, sizeof rs.url, "%s", u);
	return 0;
bad:
	errf(err, "'%.200s': not a store URL: use redis://host:port[/db]", u);
	return -1;
}

/*
 * Choose the store for this process: `flag' (--store), else
 * $HEART_STORE; none, empty or "file": the files.  Connects at the
 * first call, not now.  Returns 0, or with err HX_USAGE for a bad
 * flag, HX_CONFIG for a bad HEART_STORE.
 */
int
rds_open(const char *flag, char *err)
{
	const char *u = flag, *what = "--store";
	char why[HEART_ERRLEN];
	int i, bad = HX_USAGE;

	if (u == NULL) {
		u = getenv("HEART_STORE");
		what = "HEART_STORE";
		bad = HX_CONFIG;
	}
	if (u == NULL || *u == '\0' || strcmp(u, "file") == 0)
		return 0;
	if (parse_url(u, why) == -1) {
		errf(err, "%s: %s", what, why);
		return bad;
	}
	secret_add(getenv("HEART_REDIS_PASSWORD"));
	for (i = 0; i < NSCRIPTS; i++)
		sha1_hex(scripts[i].text, strlen(scripts[i].text),
		    scripts[i].sha);
	if (gethostname(rs.me, sizeof rs.me) == -1 || rs.me[0] == '\0')
		snprintf(rs.me, sizeof rs.me, "localhost");
	rs.me[sizeof rs.me - 1] = '\0';
	ops.name = rs.url;
	ops.cap = rcap;
	ops.brk = rbrk;
	ops.lock = rlock;
	ops.unlock = runlock;
	ops.read_json = rread;
	ops.write_json = rwrite;
	ops.agents = ragents;
	ops.known = rknown;
	if (store_ops() == NULL)
		atexit(rclose);
	store_use(&ops);
	return 0;
}
