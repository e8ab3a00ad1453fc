/*
 * batch.h - the serving batch inside the engine (batch.c): the geometry
 * found when the engine opens, the default batch each step writes unless
 * the scheduler gave one (engine_set_batch in engine.h).
 */
#ifndef BCG_ENGINE_BATCH_H
#define BCG_ENGINE_BATCH_H

#include <stdint.h>

#include "engine.h"

/* At engine_open: E's geometry and its staging buffer. */
int engine_batch_open(struct engine *e, struct engine_error *err);

/* Whether feed kind KIND is one of the batch's. */
int engine_batch_feed(int kind);

/* At engine_step_begin: the default batch of TOKENS tokens at STEP, unless
 * engine_set_batch gave the batch. */
int engine_batch_step(struct engine *e, int64_t tokens, uint64_t step, struct engine_error *err);

#endif /* BCG_ENGINE_BATCH_H */
