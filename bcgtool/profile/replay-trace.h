/*
 * replay-trace.h - `bcgtool replay --trace-json`: the busy pass's steps as
 * a Chrome trace, without a profiler.
 */
#ifndef BCG_PROFILE_REPLAY_TRACE_H
#define BCG_PROFILE_REPLAY_TRACE_H

#include <stddef.h>

#include "engine/replay.h"

/* Write R's trace (R->stats.trace) to PATH atomically. 0, or -1 with the
 * reason in MSG. */
int replay_write_trace(const char *path, const struct replay_result *r, char *msg, size_t len);

#endif /* BCG_PROFILE_REPLAY_TRACE_H */
