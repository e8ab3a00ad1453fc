/*
 * script.h - op scripts: YAML files describing one forward step
 * (formats/op-script.md), parsed and checked into a plan's program part.
 *
 * The result of loading a script is a plan_t holding meta (script path and
 * hash), dims, vars, tensors and ops, with repeat blocks expanded, names
 * resolved, every attribute stored explicitly (defaults filled in) and every
 * op's shapes and dtypes checked at every capture size; plus the capture
 * sizes of the token dim and each one's mode. Placement (offsets) is left to
 * the memory planner.
 */
#ifndef BCG_SCRIPT_SCRIPT_H
#define BCG_SCRIPT_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* The most capture sizes the token dim may have (formats/op-script.md,
 * "Limits"): room for vLLM's default sizes and more. */
#define SCRIPT_MAX_SIZES 512

/* One capture size of the token dim and the mode it is captured in. */
struct script_variant {
	int64_t tokens;
	int     mode;           /* enum plan_mode */
	int64_t requests;       /* the most requests of a batch of this size; 0
	                           when the script says nothing (any) */
	int     uniform;        /* for uniform decode batches only */
};

struct script {
	plan_t                *program;    /* owned */
	char                  *description;/* owned; "" when the script has none */
	uint32_t               nvariants;  /* ascending by tokens */
	struct script_variant *variants;   /* owned */
	/* Where each tensor of the program is declared (1-based; its split
	 * when it has one), by plan index: for errors about a tensor found
	 * after loading (the sharding pass). Owned; NULL when unknown. */
	uint32_t              *tensor_line;
	uint32_t              *tensor_col;
};

/* Where and why loading failed. line/col are 1-based; 0 when the error has
 * no position (the file cannot be read). */
struct script_error {
	unsigned line;
	unsigned col;
	char     message[512];
};

/* Load and check the script at PATH. Returns 0 and a new script in *OUT, or
 * -1 with *ERR filled and *OUT NULL. Never prints. */
int script_load(const char *path, struct script **out, struct script_error *err);

/* The same, from LEN bytes of DATA; PATH names it in the meta. */
int script_load_memory(const char *path, const char *data, size_t len,
                       struct script **out, struct script_error *err);

void script_free(struct script *script);

#endif /* BCG_SCRIPT_SCRIPT_H */
