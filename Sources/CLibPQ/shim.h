#ifndef PAYHOOK_CLIBPQ_SHIM_H
#define PAYHOOK_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
