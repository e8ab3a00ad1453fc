/*
 * share.c - keying segments for a shared executable.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "share.h"

static const char *const status_names[] = {
	[SHARE_OFF] = "off",
	[SHARE_OWN] = "own",
	[SHARE_FIRST] = "first",
	[SHARE_JOINED] = "joined",
	[SHARE_REFUSED] = "refused",
};

const char *share_status_name(int status)
{
	if (status < SHARE_OFF || status > SHARE_REFUSED)
		return "?";
	return status_names[status];
}

int share_capturable(const struct backend_capture *c)
{
	return c != NULL && !c->opaque && c->nkeys > 0 && c->keys != NULL;
}

static int keys_equal(uint32_t na, const struct backend_node_key *a, uint32_t ne,
                      const struct plan_edge *ea, uint32_t nb, const struct backend_node_key *b,
                      uint32_t nf, const struct plan_edge *eb)
{
	if (na != nb || ne != nf)
		return 0;
	for (uint32_t i = 0; i < na; i++)
		if (a[i].type != b[i].type || a[i].func != b[i].func || a[i].attrs != b[i].attrs)
			return 0;
	for (uint32_t i = 0; i < ne; i++)
		if (ea[i].from != eb[i].from || ea[i].to != eb[i].to || ea[i].type != eb[i].type ||
		    ea[i].from_port != eb[i].from_port || ea[i].to_port != eb[i].to_port)
			return 0;
	return 1;
}

int share_key_equal(const struct backend_capture *a, const struct backend_capture *b)
{
	if (!share_capturable(a) || !share_capturable(b))
		return 0;
	return keys_equal(a->nkeys, a->keys, a->nedges, a->edges, b->nkeys, b->keys, b->nedges,
	                  b->edges);
}

/* FNV-1a over the fields one at a time (no padding bytes hashed). */
static uint64_t mix(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t share_key_hash(const struct backend_capture *c)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = mix(h, c->nkeys);
	for (uint32_t i = 0; i < c->nkeys; i++) {
		h = mix(h, (uint64_t)(uint32_t)c->keys[i].type);
		h = mix(h, c->keys[i].func);
		h = mix(h, c->keys[i].attrs);
	}
	h = mix(h, c->nedges);
	for (uint32_t i = 0; i < c->nedges; i++) {
		const struct plan_edge *e = &c->edges[i];
		h = mix(h, ((uint64_t)e->from << 32) | e->to);
		h = mix(h, ((uint64_t)e->type << 16) | ((uint64_t)e->from_port << 8) | e->to_port);
	}
	return h;
}

int share_find(const struct share_pool *p, const struct backend_capture *c)
{
	uint64_t h;

	if (!share_capturable(c))
		return -1;
	h = share_key_hash(c);
	for (uint32_t i = 0; i < p->ngroups; i++) {
		const struct share_group *g = &p->groups[i];
		if (g->tag != p->tag && g->hash == h && keys_equal(g->nkeys, g->keys, g->nedges, g->edges, c->nkeys,
		                               c->keys, c->nedges, c->edges))
			return (int)i;
	}
	return -1;
}

int share_add(struct share_pool *p, const struct backend_capture *c)
{
	struct share_group *g;

	if (!share_capturable(c))
		return -1;
	if (p->ngroups == p->cap) {
		uint32_t cap = p->cap ? 2 * p->cap : 16;
		struct share_group *n = realloc(p->groups, cap * sizeof *n);
		if (n == NULL)
			return -1;
		p->groups = n;
		p->cap = cap;
	}
	g = &p->groups[p->ngroups];
	memset(g, 0, sizeof *g);
	g->keys = malloc(c->nkeys * sizeof *g->keys);
	g->edges = malloc((c->nedges ? c->nedges : 1) * sizeof *g->edges);
	if (g->keys == NULL || g->edges == NULL) {
		free(g->keys);
		free(g->edges);
		return -1;
	}
	memcpy(g->keys, c->keys, c->nkeys * sizeof *g->keys);
	if (c->nedges > 0)
		memcpy(g->edges, c->edges, c->nedges * sizeof *g->edges);
	g->nkeys = c->nkeys;
	g->nedges = c->nedges;
	g->hash = share_key_hash(c);
	g->first = UINT32_MAX;
	g->tag = p->tag;
	return (int)p->ngroups++;
}

void share_next_variant(struct share_pool *p)
{
	p->tag++;
}

void share_take(struct share_pool *p, int gi)
{
	if (gi >= 0 && (uint32_t)gi < p->ngroups)
		p->groups[gi].tag = p->tag;
}

void share_pool_release(struct share_pool *p, const struct backend_ops *be, struct backend *b)
{
	for (uint32_t i = 0; i < p->ngroups; i++) {
		if (be != NULL && p->groups[i].exec != NULL)
			be->exec_put(b, p->groups[i].exec);
		free(p->groups[i].keys);
		free(p->groups[i].edges);
	}
	free(p->groups);
	memset(p, 0, sizeof *p);
}
