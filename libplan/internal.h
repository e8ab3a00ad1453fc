/*
 * internal.h - libplan's private structures, shared by the model, the
 * reader, the writer and the validator. Not installed.
 */
#ifndef PLAN_INTERNAL_H
#define PLAN_INTERNAL_H

#include <stdarg.h>
#include <sys/types.h>

#include "plan.h"

/* A growable array of fixed-size elements. */
struct plan_vec {
	void    *data;
	uint32_t count;
	uint32_t cap;
};

/* Everything a plan owns but its arrays of records: strings and the small
 * arrays records point to. Freed as a whole with the plan. */
struct plan_pool_chunk;

struct plan_variant_rec {
	struct plan_variant pub;    /* pub.items points at items.data */
	struct plan_vec     items;  /* struct plan_item */
};

struct plan {
	struct plan_meta   meta;
	struct plan_layout layout;
	struct plan_stats  stats;
	unsigned           format_major;
	unsigned           format_minor;

	struct plan_vec dims;         /* struct plan_dim */
	struct plan_vec vars;         /* struct plan_var */
	struct plan_vec tensors;      /* struct plan_tensor */
	struct plan_vec ops;          /* struct plan_op */
	struct plan_vec variants;     /* struct plan_variant_rec */
	struct plan_vec segments;     /* struct plan_segment */
	struct plan_vec breakpoints;  /* struct plan_breakpoint */
	struct plan_vec checks;       /* struct plan_check */
	struct plan_vec dispatch;     /* struct plan_dispatch */
	struct plan_vec choices;      /* struct plan_choice */
	struct plan_vec wsrc;         /* struct plan_weight_source */
	struct plan_vec shares;       /* struct plan_share (1.6) */

	/* Recorded plans (1.4): RECORDED says the plan has a recording. */
	int                   recorded;
	struct plan_recording recording;
	struct plan_vec modules;      /* struct plan_module */
	struct plan_vec functions;    /* struct plan_function */
	struct plan_vec launches;     /* struct plan_launch */
	struct plan_vec allocs;       /* struct plan_alloc */
	struct plan_vec alloc_order;  /* uint32_t: allocs by (device, address) */

	/* Tensor parallelism (1.5): this plan's rank, and on rank 0 the
	 * other ranks' plans (owned), indexed by rank - 1; NULL where a rank
	 * is not attached. */
	struct plan_dist      dist;
	plan_t              **ranks;
	uint32_t              nranks;    /* entries of RANKS: world - 1 */

	struct plan_pool_chunk *pool;
};

/* Pool allocation: zeroed, aligned for any record, NULL when out of memory. */
void       *plan__pool_alloc(plan_t *plan, size_t bytes);
/* A pool copy of S (NULL copies as ""). */
const char *plan__pool_strdup(plan_t *plan, const char *s);
/* A pool copy of N elements of SIZE bytes (N == 0 gives NULL). */
void       *plan__pool_memdup(plan_t *plan, const void *src, size_t n, size_t size);

/* Append one zeroed element to VEC; NULL when out of memory or past
 * UINT32_MAX - 1 elements. */
void *plan__vec_push(struct plan_vec *vec, size_t size);

/* Fill DIAG (may be NULL) and return CODE. */
int plan__fail(struct plan_diag *diag, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The flags an implementation choice may have (in memory: Step is no
 * bit of the file's Choice_Flags, format.h). plan__choice_flags_bad:
 * 0 when FLAGS are sound; 1 when it has bits outside those; 2 when it is
 * marked close or step (*MARK, close first) without being tuned. The
 * validator and plan_set_choice word their messages around it. */
#define PLAN__CHOICE_FLAGS (PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE | PLAN_CHOICE_STEP)
int plan__choice_flags_bad(uint32_t flags, const char **mark);

/* The checks plan_add_launch makes of launch N against the functions and
 * allocations of PLAN. */
int plan__check_launch(const plan_t *plan, const struct plan_launch *l, uint32_t n,
                       struct plan_diag *diag);

/* Append ITEM to VARIANT's item list. */
int plan__variant_push_item(plan_t *plan, uint32_t variant, int kind, uint32_t index,
                            struct plan_diag *diag);

/* Replace VARIANT's item list with a copy of ITEMS[0..N): the reader restores
 * the file's order, which adding segments and breakpoints may not give. */
/* Whether PLAN needs format 1.5 (tensor parallelism): a world of two or
 * more ranks, a split tensor or a sliced weight source. The writer writes
 * 1.5 exactly for these; the JSON dump shows their fields only for these. */
int plan__uses_ranks(const plan_t *plan);

int plan__variant_set_items(plan_t *plan, uint32_t variant, const struct plan_item *items,
                            uint32_t n, struct plan_diag *diag);

/* The system calls plan_write_file makes that can fail part-way, so that
 * tests can make them fail. Each behaves as its POSIX namesake, errno
 * included; CTX is passed through. fsync is called on the temporary file,
 * then on its directory after the rename. */
struct plan__io {
	ssize_t (*write)(void *ctx, int fd, const void *buf, size_t len);
	int     (*fsync)(void *ctx, int fd);
	int     (*rename)(void *ctx, const char *from, const char *to);
	void    *ctx;
};

/* plan_write_file with IO in place of the system calls (NULL: the real
 * ones). Not exported from the shared library: tests link libplan-core. */
int plan__write_file_io(const plan_t *plan, const char *path, const struct plan__io *io,
                        struct plan_diag *diag);

#endif /* PLAN_INTERNAL_H */
