/*
 * hash.c - the hashes and checksums of libplan (FNV-1a 64, CRC-32C, segment
 * fingerprints), the time stamp of new plans and the default read limits.
 *
 * plan-format.md defines each exactly; the test vectors there are checked
 * by t/unit/plan-hash.c.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/crc.h>

#include "internal.h"

#define FNV64_PRIME UINT64_C(0x100000001b3)

uint64_t plan_hash64(const void *data, size_t len, uint64_t state)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		state ^= p[i];
		state *= FNV64_PRIME;
	}
	return state;
}

/* CRC-32C (Castagnoli, reflected, init and final xor 0xFFFFFFFF) by
 * Intel's ISA-L, which picks the CPU's crc32 or carry-less multiply
 * instructions at run time. crc32_iscsi takes and returns the bare CRC
 * register, without the initial value or the final xor, so both are
 * applied here; it takes an int length, so long buffers go through it in
 * pieces, the register carried from one to the next. t/unit/plan-hash.c
 * checks the result against the published check values, the bitwise
 * definition, and past 1 GiB. */
#define CRC32C_PIECE (1 << 30)

uint32_t plan_crc32c(const void *data, size_t len)
{
	/* ISA-L's prototype lacks the const; it only reads the buffer. */
	unsigned char *p = (unsigned char *)(uintptr_t)data;
	uint32_t crc = 0xFFFFFFFFu;

	while (len > 0) {
		int n = len > CRC32C_PIECE ? CRC32C_PIECE : (int)len;

		crc = crc32_iscsi(p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return crc ^ 0xFFFFFFFFu;
}

/* The fingerprint hashes a canonical serialization (plan-format.md,
 * "Fingerprint"): little-endian integers, each string as its length and
 * bytes, every list preceded by its count, so that no two different
 * segments serialize alike. */
static uint64_t hash_u32(uint64_t h, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8),
	                       (unsigned char)(v >> 16), (unsigned char)(v >> 24) };
	return plan_hash64(b, sizeof b, h);
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	h = hash_u32(h, (uint32_t)v);
	return hash_u32(h, (uint32_t)(v >> 32));
}

static int edge_has_data(const struct plan_edge *e)
{
	return e->type != PLAN_EDGE_DEFAULT || e->from_port != PLAN_PORT_DEFAULT ||
	       e->to_port != PLAN_PORT_DEFAULT;
}

/* A segment's edges, after its nodes: the same in both fingerprints. */
static uint64_t hash_edges(uint64_t h, const struct plan_segment *segment)
{
	uint32_t ndata = 0;

	h = hash_u32(h, segment->nedges);
	for (uint32_t i = 0; i < segment->nedges; i++) {
		h = hash_u32(h, segment->edges[i].from);
		h = hash_u32(h, segment->edges[i].to);
		if (edge_has_data(&segment->edges[i]))
			ndata++;
	}
	/* Edge types and ports (format 1.1) follow only when some edge has
	 * them, so that a graph of default edges keeps the fingerprint 1.0
	 * gave it. The part before is self-delimiting, so the two forms
	 * never serialize alike. */
	if (ndata == 0)
		return h;
	h = hash_u32(h, ndata);
	for (uint32_t i = 0; i < segment->nedges; i++) {
		const struct plan_edge *e = &segment->edges[i];
		unsigned char b[3] = { e->type, e->from_port, e->to_port };
		if (!edge_has_data(e))
			continue;
		h = hash_u32(h, i);
		h = plan_hash64(b, sizeof b, h);
	}
	return h;
}

uint64_t plan_fingerprint(const struct plan_segment *segment)
{
	uint64_t h = PLAN_HASH64_INIT;

	h = hash_u32(h, segment->nnodes);
	for (uint32_t i = 0; i < segment->nnodes; i++) {
		const struct plan_node *n = &segment->nodes[i];
		const char *kernel = n->kernel != NULL ? n->kernel : "";
		size_t len = strlen(kernel);

		h = hash_u32(h, (uint32_t)n->type);
		h = hash_u32(h, (uint32_t)len);
		h = plan_hash64(kernel, len, h);
		for (int k = 0; k < 3; k++)
			h = hash_u32(h, n->grid[k]);
		for (int k = 0; k < 3; k++)
			h = hash_u32(h, n->block[k]);
		h = hash_u32(h, n->shmem);
		h = hash_u32(h, n->nparams);
		for (uint32_t k = 0; k < n->nparams; k++) {
			h = hash_u32(h, n->params[k].index);
			h = hash_u64(h, n->params[k].offset);
		}
	}
	return hash_edges(h, segment);
}

uint64_t plan_fingerprint_recorded(const plan_t *plan, const struct plan_segment *segment)
{
	uint64_t h = PLAN_HASH64_INIT;

	h = hash_u32(h, segment->nnodes);
	for (uint32_t i = 0; i < segment->nnodes; i++) {
		const struct plan_node *n = &segment->nodes[i];
		const struct plan_launch *l = NULL;
		const struct plan_function *f = NULL;
		const char *name = "";
		size_t len;

		if (n->type == PLAN_NODE_KERNEL && (l = plan_get_launch(plan, n->launch)) != NULL &&
		    l->type == PLAN_NODE_KERNEL &&
		    (f = plan_get_function(plan, l->function)) != NULL)
			name = f->name;
		else
			l = NULL;
		len = strlen(name);
		h = hash_u32(h, (uint32_t)n->type);
		h = hash_u32(h, (uint32_t)len);
		h = plan_hash64(name, len, h);
		for (int k = 0; k < 3; k++)
			h = hash_u32(h, l ? l->grid[k] : 0);
		for (int k = 0; k < 3; k++)
			h = hash_u32(h, l ? l->block[k] : 0);
		for (int k = 0; k < 3; k++)
			h = hash_u32(h, l ? l->cluster[k] : 0);
		h = hash_u32(h, l ? l->shmem : 0);
		h = hash_u32(h, l ? l->npatches : 0);
		for (uint32_t k = 0; l && k < l->npatches; k++) {
			h = hash_u32(h, l->patches[k].byte);
			h = hash_u32(h, l->patches[k].addr.alloc);
			h = hash_u64(h, l->patches[k].addr.offset);
		}
	}
	return hash_edges(h, segment);
}

/* SOURCE_DATE_EPOCH, per reproducible-builds.org, is a decimal count of
 * seconds: only digits, no sign, no spaces. Anything else is ignored. */
int64_t plan_now(void)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");

	if (s != NULL && s[0] != '\0') {
		int64_t v = 0;
		const char *p;

		for (p = s; *p >= '0' && *p <= '9'; p++) {
			if (v > (INT64_MAX - (*p - '0')) / 10)
				break;
			v = v * 10 + (*p - '0');
		}
		if (*p == '\0')
			return v;
	}
	return (int64_t)time(NULL);
}

void plan_limits_default(struct plan_limits *limits)
{
	limits->max_file_bytes = UINT64_C(1) << 30;
	limits->max_content_bytes = UINT64_C(1) << 30;
	limits->max_records = UINT32_C(1) << 24;
}
