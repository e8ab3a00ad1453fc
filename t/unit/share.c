/*
 * share.c - which segments may share an executable (engine/share.h), on
 * synthetic captures: the keying needs no backend.
 *
 * A segment's key is its node types, each kernel's function identity and
 * launch attributes, and its edges; launch shapes, shared memory and
 * parameters are not in it (an update carries them).
 */
#include "config.h"

#include "engine/share.h"
#include "tap.h"

#define N 3

/* A segment of three kernels a -> b -> c, the second edge programmatic,
 * launched at TOKENS tokens (grid and a parameter follow it). */
struct seg {
	struct backend_capture  cap;
	struct backend_node_key keys[N];
	struct plan_node        nodes[N];
	struct plan_param       params[N];
	struct plan_edge        edges[N - 1];
};

static void seg_make(struct seg *s, uint32_t tokens)
{
	memset(s, 0, sizeof *s);
	for (int i = 0; i < N; i++) {
		s->keys[i].type = PLAN_NODE_KERNEL;
		s->keys[i].func = 0x7f0000001000ull + 0x40u * (unsigned)i;
		s->keys[i].attrs = 0x1234;
		s->nodes[i].type = PLAN_NODE_KERNEL;
		s->nodes[i].kernel = "k";            /* one name for all three */
		s->nodes[i].grid[0] = tokens;
		s->nodes[i].block[0] = 128;
		s->params[i].index = 0;
		s->params[i].offset = 4096u * tokens;
		s->nodes[i].params = &s->params[i];
		s->nodes[i].nparams = 1;
	}
	for (int i = 0; i < N - 1; i++) {
		s->edges[i].from = (uint32_t)i;
		s->edges[i].to = (uint32_t)i + 1;
	}
	s->edges[1].type = PLAN_EDGE_PROGRAMMATIC;
	s->cap.nnodes = N;
	s->cap.nodes = s->nodes;
	s->cap.nkeys = N;
	s->cap.keys = s->keys;
	s->cap.nedges = N - 1;
	s->cap.edges = s->edges;
}

int main(void)
{
	struct seg a, b;
	struct share_pool pool = { 0 };
	int g;

	seg_make(&a, 1);
	seg_make(&b, 8);
	ok(share_capturable(&a.cap), "a segment with keys can share");
	ok(share_key_equal(&a.cap, &b.cap),
	   "the same kernels at other sizes (grid, parameters) share");
	is_u64(share_key_hash(&a.cap), share_key_hash(&b.cap), "and hash alike");

	b.keys[1].func += 0x40;
	ok(!share_key_equal(&a.cap, &b.cap), "another function does not share");
	seg_make(&b, 8);
	b.nodes[1].kernel = "other";
	ok(share_key_equal(&a.cap, &b.cap), "names are not the key: another name alone shares");
	a.nodes[1].kernel = "k";

	seg_make(&b, 8);
	b.keys[2].attrs ^= 1;
	ok(!share_key_equal(&a.cap, &b.cap), "another launch attribute does not share");

	seg_make(&b, 8);
	b.edges[1].type = PLAN_EDGE_DEFAULT;
	ok(!share_key_equal(&a.cap, &b.cap), "a plain edge for a programmatic one does not share");
	seg_make(&b, 8);
	b.edges[1].from_port = 1;
	ok(!share_key_equal(&a.cap, &b.cap), "another edge port does not share");
	seg_make(&b, 8);
	b.edges[1].from = 0;
	ok(!share_key_equal(&a.cap, &b.cap), "another edge does not share");
	seg_make(&b, 8);
	b.cap.nedges = 1;
	ok(!share_key_equal(&a.cap, &b.cap), "an edge fewer does not share");

	seg_make(&b, 8);
	b.cap.nkeys = b.cap.nnodes = N - 1;
	b.cap.nedges = 1;
	ok(!share_key_equal(&a.cap, &b.cap), "another node count does not share");

	seg_make(&b, 8);
	b.keys[0].type = PLAN_NODE_MEMSET;
	ok(!share_key_equal(&a.cap, &b.cap), "another node type does not share");

	seg_make(&b, 8);
	b.cap.opaque = 1;
	ok(!share_capturable(&b.cap) && !share_key_equal(&a.cap, &b.cap),
	   "a segment with an attribute not read back never shares");
	ok(!share_key_equal(&b.cap, &b.cap), "not even with itself");
	b.cap.opaque = 0;
	b.cap.nkeys = 0;
	ok(!share_capturable(&b.cap), "nor one without keys");

	/* The pool: a group per key, found again by an equal key. */
	seg_make(&a, 1);
	g = share_add(&pool, &a.cap);
	is_int(g, 0, "the first key makes group 0");
	is_int(share_find(&pool, &a.cap), -1, "which its own variant does not take again");
	share_next_variant(&pool);
	seg_make(&b, 16);
	is_int(share_find(&pool, &b.cap), 0, "the same topology at 16 tokens finds it");
	b.keys[0].func ^= 0x10;
	is_int(share_find(&pool, &b.cap), -1, "another function finds none");
	is_int(share_add(&pool, &b.cap), 1, "and makes group 1");
	share_next_variant(&pool);
	is_int(share_find(&pool, &b.cap), 1, "which the next variant then finds");
	/* One variant takes a group once: its second segment of the same
	 * topology makes a group of its own, which the next variant's
	 * second segment then finds. */
	share_next_variant(&pool);
	seg_make(&b, 2);
	g = share_find(&pool, &b.cap);
	is_int(g, 0, "a new variant finds the group");
	share_take(&pool, g);
	is_int(share_find(&pool, &b.cap), -1, "but not twice in that variant");
	is_int(share_add(&pool, &b.cap), 2, "its second such segment makes group 2");
	share_next_variant(&pool);
	g = share_find(&pool, &b.cap);
	is_int(g, 0, "the next variant's first such segment takes group 0");
	share_take(&pool, g);
	is_int(share_find(&pool, &b.cap), 2, "and its second group 2");
	share_next_variant(&pool);
	b.keys[0].func ^= 0x10;

	/* The pool copied the keys: changing the capture leaves it. */
	a.keys[0].func = 1;
	seg_make(&a, 4);
	is_int(share_find(&pool, &a.cap), 0, "the group keeps its own copy of the key");
	b.cap.opaque = 1;
	is_int(share_find(&pool, &b.cap), -1, "an opaque segment finds no group");
	is_int(share_add(&pool, &b.cap), -1, "and makes none");
	is_int(pool.ngroups, 3, "three groups");
	share_pool_release(&pool, NULL, NULL);
	is_int(pool.ngroups, 0, "released");

	is_str(share_status_name(SHARE_JOINED), "joined", "status names");
	is_str(share_status_name(SHARE_REFUSED), "refused", "status names");
	return tap_done();
}
