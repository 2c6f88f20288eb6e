#!/usr/bin/env bats
# The rules as pure functions (lib/heartstore.h: cap_step, brk_step,
# budget_step, bucket_step, pause_rule; lib/heartwake.h: ask.c's bound
# of a usage block, llmsend.c's account rate limit of a 429, slot.c's
# slot_missed; lib/heartpulse.h: the pulse's due time and overdue rule):
# tables of states, times and keys run by t/core-step.c, no store, no
# clock.
# The same rules are proven through the programs, on both stores, by
# heart-cap*.bats, heart-breaker.bats and heart-redis.bats.

load helpers

@test "cap_step, brk_step, budget_step, bucket_step, pause_rule and slot_missed hold on every row of their tables, DST days and month ends included; a usage block is bounded; a 429 is the account's only when a window is spent; a schedule nobody looks at is overdue" {
	run core-step
	assert_success
	refute_output --partial 'not ok'
	assert_line --partial 'spring forward: the next day starts at 04:00Z (EDT)'
	assert_line --partial 'one probe: a second caller is refused'
	assert_line --partial 'window: the tenth failure within the hour opens it'
	assert_line --partial 'budget: reached, a take is refused'
	assert_line --partial 'bucket: a wake not in line waits for those in it'
	assert_line --partial 'usage: each count past its bound is counted at it'
	assert_line --partial 'pause: of two, the one that ends later is shown'
	assert_line --partial 'monthly: reached, refused on the month'"'"'s last local second'
	assert_line --partial 'monthly: an old counter has spent nothing this month'
	assert_line --partial 'rate: of Anthropic'"'"'s spent windows, the latest reset'
	assert_line --partial 'rate: a Retry-After alone is the request'"'"'s'
	assert_line --partial 'catch_up: 10m, a wake a second past it is missed'
	assert_line --partial 'fleet: a fourth in flight could reach it: crowded'
	assert_line --partial 'fleet: one at a time, and told so'
	assert_line --partial 'fleet: Berlin'"'"'s midnight starts a day, the last one kept'
	assert_line --partial 'fleet: a week that knows no day makes no forecast'
	assert_line --partial 'an interval past due, and nobody looked: overdue'
	assert_line '1..120'
}
