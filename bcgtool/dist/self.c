/*
 * dist/self.c - the communicator of the rank running on this thread, for
 * the parts of bcgtool that have no communicator passed to them: the
 * engine opened by a rank takes it (engine_open), the CUDA backend has
 * its graphs with collectives followed by the rank's watchdog. Apart from launch.c so that what links the backend
 * alone (unit tests) needs nothing else of dist/.
 */
#include "config.h"

#include "dist.h"
#include "util.h"

/* Per thread: ranks as threads run one a thread. */
static _Thread_local struct dist_comm *self;

struct dist_comm *dist_self(void)
{
	return self;
}

void dist_self_set(struct dist_comm *comm)
{
	self = comm;
}

void dist_rank_enter(struct dist_comm *comm)
{
	if (comm->rank != 0)
		bcg_progress_mute_thread();
	self = comm;
}
