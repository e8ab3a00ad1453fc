/*
 * generate.h - greedy generation: a prompt prefilled as one chunk, then
 * one token a step, each step's input the previous step's argmax.
 *
 * The script says how (formats/op-script.md, "Generation"): its prompt
 * feed names the i32 output fed back (argmax's), and the scores are that
 * argmax's input. Step 0 runs the prompt's P tokens, every later step one
 * token; a step of R real tokens runs at a token count T >= R (a capture
 * size on replay), padded with id 0, and every var is set to the tokens
 * seen before it plus T, so that positions and kv_len follow the
 * sequence. The token generated is the feedback's element R - 1.
 */
#ifndef BCG_ENGINE_GENERATE_H
#define BCG_ENGINE_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "engine.h"

/* How one step runs: at REAL tokens, the engine's e->gen already set;
 * sets *RAN to the token count it ran at, and *SETUP_NS to the time it
 * spent making that count ready to run before the step itself (building
 * and instantiating graphs, with their eager warm-up; 0 when it was
 * ready already). */
struct gen_driver {
	int  (*step)(void *ctx, struct engine *e, int64_t real, uint64_t step, int64_t *ran,
	             uint64_t *setup_ns, struct engine_error *err);
	void  *ctx;
};

struct gen_opts {
	const int32_t *prompt;
	int64_t        nprompt;     /* >= 1 */
	uint64_t       ntokens;     /* tokens to generate, >= 1 */
	const char    *logits;      /* NULL, or a file for the last step's scores */
	/* Untimed steps on each token count the generation runs at (the
	 * prompt's, and 1 when it generates more than one token), each as
	 * its step of the generation would run, before the state is reset
	 * and the generation begins: what a count's first step pays once
	 * (graphs built and uploaded, modules loaded, the libraries' first
	 * calls) stays out of the timed steps. */
	uint64_t       warmup;
};

/* One step, timed on the host clock and waited for. */
struct gen_step {
	int64_t  tokens;            /* real tokens */
	int64_t  ran;               /* the token count it ran at */
	double   ms;                /* all of it, setup included */
	double   setup_ms;          /* of which making RAN ready (gen_driver) */
};

struct gen_result {
	int32_t         *tokens;    /* ntokens generated ids */
	struct gen_step *steps;     /* ntokens */
	struct gen_step *warm;      /* the warm-up steps, nwarm */
	uint64_t         ntokens;
	uint64_t         nwarm;
	uint32_t         feed;      /* the prompt feed's tensor */
	uint32_t         scores;    /* the scores tensor, or PLAN_NONE */
};

void gen_result_release(struct gen_result *r);

/* The prompt feed of PLAN, or PLAN_NONE; its scores tensor in *SCORES. */
uint32_t gen_find_feed(const plan_t *plan, uint32_t *scores);

/* Parse "1,2,3" (or a file of ids separated by commas or white space when
 * TEXT starts with '@') into a malloc'd array; -1 with a sentence in MSG. */
int gen_parse_prompt(const char *text, int32_t **ids, int64_t *n, char *msg, size_t len);

/* Run a generation on E: the warm-up steps, a reset, the timed steps. */
int generate(struct engine *e, const struct gen_opts *o, const struct gen_driver *d,
             struct gen_result *r, struct engine_error *err);

/* The prompt, the tokens and each step's token count and times (the
 * warm-up steps first), as a table or (JSON) an object whose first key
 * WHAT ("script", "plan") names PATH. */
void gen_print(FILE *f, const struct gen_opts *o, const struct gen_result *r, int json,
               const char *what, const char *path, const char *backend, const char *device);

#endif /* BCG_ENGINE_GENERATE_H */
