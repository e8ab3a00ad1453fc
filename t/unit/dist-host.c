/*
 * dist-host.c - ranks as threads (dist/threads.c) over the host group
 * (dist/host-group.c): all_reduce sums in f32 in rank order into every
 * rank's buffer, all_gather lays the ranks' buffers one after the other,
 * a barrier waits for all, a rank that never arrives is named within the
 * timeout, and a rank that fails wakes the others. Rank threads start
 * with SIGINT and SIGTERM blocked (bcg_thread_start), so that a signal's
 * handler runs on the main thread.
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist.h"
#include "plan.h"
#include "tap.h"

#define WORLD 4
#define N 1000

struct result {
	float    sum[WORLD][N];
	float    gather[WORLD][WORLD * 3];
	uint16_t bf16[WORLD][2];
	int      rc[WORLD];
	char     msg[WORLD][256];
	int      world_seen[WORLD];
};

/* Rank r's element i: values whose f32 sum depends on the order. */
static float value(int r, int i)
{
	static const float big[WORLD] = { 1e8f, 1.0f, -1e8f, 1.0f };
	return i == 0 ? big[r] : (float)(r + 1) * 0.1f + (float)i;
}

static int collectives(struct dist_comm *c, void *arg)
{
	struct result *res = arg;
	int r = c->rank;
	float send[3];

	res->world_seen[r] = c->world;
	for (int i = 0; i < N; i++)
		res->sum[r][i] = value(r, i);
	c->current = "sum";
	if (dist_all_reduce(c, res->sum[r], N, PLAN_DTYPE_F32, NULL, res->msg[r],
	                    sizeof res->msg[r]) != 0)
		return 3;
	for (int k = 0; k < 3; k++)
		send[k] = (float)(10 * r + k);
	c->current = "gather";
	if (dist_all_gather(c, send, res->gather[r], 3, PLAN_DTYPE_F32, NULL, res->msg[r],
	                    sizeof res->msg[r]) != 0)
		return 3;
	/* bf16: 1 + 2^-8 per rank rounds on store only, after the f32 sum */
	res->bf16[r][0] = 0x3f80;      /* 1.0 */
	res->bf16[r][1] = 0x3b80;      /* 2^-8 */
	if (dist_all_reduce(c, res->bf16[r], 2, PLAN_DTYPE_BF16, NULL, res->msg[r],
	                    sizeof res->msg[r]) != 0)
		return 3;
	c->current = NULL;
	return dist_barrier(c, res->msg[r], sizeof res->msg[r]) != 0 ? 3 : 0;
}

/* Rank 2 never comes to the all_reduce. */
static int one_missing(struct dist_comm *c, void *arg)
{
	struct result *res = arg;
	float x = 1.0f;
	int r = c->rank;

	if (r == 2)
		return 0;
	c->current = "o.3.all_reduce";
	res->rc[r] = dist_all_reduce(c, &x, 1, PLAN_DTYPE_F32, NULL, res->msg[r],
	                             sizeof res->msg[r]);
	return res->rc[r] != 0 ? 3 : 0;
}

/* Rank 1 fails before its first collective: the others are woken. */
static int one_fails(struct dist_comm *c, void *arg)
{
	struct result *res = arg;
	float x = 1.0f;
	int r = c->rank;

	if (r == 1)
		return 2;
	c->current = "lm_head.all_gather";
	res->rc[r] = dist_all_reduce(c, &x, 1, PLAN_DTYPE_F32, NULL, res->msg[r],
	                             sizeof res->msg[r]);
	return res->rc[r] != 0 ? 3 : 0;
}

/* Ranks in different collectives: an error, not a wrong answer. */
static int mismatched(struct dist_comm *c, void *arg)
{
	struct result *res = arg;
	float x[4] = { 0 };
	int r = c->rank;

	c->current = r == 0 ? "a" : "b";
	res->rc[r] = dist_all_reduce(c, x, r == 0 ? 4 : 2, PLAN_DTYPE_F32, NULL, res->msg[r],
	                             sizeof res->msg[r]);
	return res->rc[r] != 0 ? 3 : 0;
}

/* Whether this thread blocks SIGINT and SIGTERM, into blocked[rank]. */
static int masks(struct dist_comm *c, void *arg)
{
	int *blocked = arg;
	sigset_t cur;

	if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0)
		return 3;
	blocked[c->rank] = sigismember(&cur, SIGINT) == 1 && sigismember(&cur, SIGTERM) == 1;
	return 0;
}

static int single(struct dist_comm *c, void *arg)
{
	*(int *)arg = c == NULL ? 1 : 2;
	return 0;
}

int main(void)
{
	struct result *res = calloc(1, sizeof *res);
	struct dist_opts o = { .world = WORLD, .transport = DIST_HOST, .timeout_s = 10,
	                       .what = "test" };
	int bad = 0, got = 0;
	time_t t0;

	if (res == NULL)
		return 1;
	is_int(dist_run(&o, collectives, res), 0, "four ranks as threads: collectives succeed");
	for (int r = 0; r < WORLD; r++)
		if (res->world_seen[r] != WORLD)
			bad++;
	is_int(bad, 0, "every rank sees a world of %d", WORLD);
	bad = 0;
	for (int r = 0; r < WORLD; r++)
		for (int i = 0; i < N; i++) {
			float want = 0.0f;            /* f32, rank 0 first */
			for (int k = 0; k < WORLD; k++)
				want += value(k, i);
			if (memcmp(&res->sum[r][i], &want, sizeof want) != 0)
				bad++;
		}
	is_int(bad, 0, "all_reduce: every rank holds the f32 sum in rank order, bit for bit");
	/* the order matters: 1e8 + 1 - 1e8 + 1 is 1 in f32 (rank order), 2 exactly */
	is_close(res->sum[0][0], 1.0f, 0, "all_reduce: the sum follows rank order (1e8+1-1e8+1 = 1)");
	bad = 0;
	for (int r = 0; r < WORLD; r++)
		for (int k = 0; k < WORLD; k++)
			for (int j = 0; j < 3; j++)
				if (res->gather[r][k * 3 + j] != (float)(10 * k + j))
					bad++;
	is_int(bad, 0, "all_gather: rank k's buffer at k * count on every rank");
	/* four ranks of [1.0, 2^-8]: 4.0 (bf16 0x4080) and 2^-6 (0x3c80) */
	is_int(res->bf16[0][0], 0x4080, "all_reduce bf16: 4 x 1.0 = 4.0");
	is_int(res->bf16[0][1], 0x3c80, "all_reduce bf16: 4 x 2^-8 = 2^-6");

	memset(res, 0, sizeof *res);
	o.timeout_s = 0.5;
	t0 = time(NULL);
	got = dist_run(&o, one_missing, res);
	is_int(got, 3, "a rank that never arrives: the others fail (3)");
	ok(time(NULL) - t0 <= 5, "within the timeout (%lld s)", (long long)(time(NULL) - t0));
	ok(strstr(res->msg[0], "rank 2 did not arrive") != NULL &&
	   strstr(res->msg[0], "o.3.all_reduce") != NULL,
	   "the message names the rank and the collective: %s", res->msg[0]);
	ok(res->rc[1] != 0 && res->rc[3] != 0 && strstr(res->msg[3], "rank 2") != NULL,
	   "every waiting rank fails: %s", res->msg[3]);

	memset(res, 0, sizeof *res);
	o.timeout_s = 30;
	t0 = time(NULL);
	got = dist_run(&o, one_fails, res);
	is_int(got, 3, "a rank that fails: the worst status of the ranks");
	ok(time(NULL) - t0 <= 5, "the others wake at once, not at the timeout");
	ok(strstr(res->msg[0], "rank 1 gave up") != NULL, "and say which rank: %s", res->msg[0]);

	memset(res, 0, sizeof *res);
	o.world = 2;
	got = dist_run(&o, mismatched, res);
	is_int(got, 3, "ranks in different collectives fail");
	ok(strstr(res->msg[0], "differ") != NULL || strstr(res->msg[1], "differ") != NULL,
	   "saying the programs differ: %s / %s", res->msg[0], res->msg[1]);

	{
		int blocked[WORLD] = { 0 }, n = 0;
		sigset_t cur;
		o.world = WORLD;
		is_int(dist_run(&o, masks, blocked), 0, "ranks that look at their signal mask run");
		for (int r = 0; r < WORLD; r++)
			n += blocked[r];
		is_int(n, WORLD, "every rank thread blocks SIGINT and SIGTERM");
		ok(pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, SIGINT) == 0 &&
		   sigismember(&cur, SIGTERM) == 0,
		   "the main thread still takes them: its handler runs there");
	}

	o.world = 1;
	is_int(dist_run(&o, single, &got), 0, "one rank runs in place");
	is_int(got, 1, "with no communicator");
	free(res);
	return tap_done();
}
