// Ember's data parallelism in one include: process groups and collectives,
// DistributedDataParallel, DataParallel. See docs/dist.md.
#pragma once

#include "dist/data_parallel.h"
#include "ember_config.h"
#if EMBER_HAVE_MPI
#include "dist/ddp.h"
#include "dist/process_group.h"
#endif
