/* The supervisor's one global state (core.h). */
#include "core.h"

struct supervisor sup;
