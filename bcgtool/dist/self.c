/*
 * dist/self.c - this process's rank's communicator while it runs, for the
 * parts of bcgtool that have no communicator passed to them (the CUDA
 * backend's arena). Apart from launch.c so that what links the backend
 * alone (unit tests) needs nothing else of dist/.
 */
#include "config.h"

#include "dist.h"

static struct dist_comm *self;

struct dist_comm *dist_self(void)
{
	return self;
}

void dist_self_set(struct dist_comm *comm)
{
	self = comm;
}
