/* error.c - messages and names for SL_E* codes and sl_status_t. */
#include <string.h>

#include "sluice/error.h"

const char *sl_strerror(int err) {
    switch (err) {
    case 0: return "success";
#define SL__ERR_MSG(name, val, msg) case (val): return msg;
        SL_ERRNO_MAP(SL__ERR_MSG)
#undef SL__ERR_MSG
    default: return "unknown error";
    }
}

const char *sl_errname(int err) {
    switch (err) {
    case 0: return "SL_OK";
#define SL__ERR_NAME(name, val, msg) case (val): return "SL_E" #name;
        SL_ERRNO_MAP(SL__ERR_NAME)
#undef SL__ERR_NAME
    default: return "SL_EUNKNOWN";
    }
}

const char *sl_status_name(sl_status_t st) {
    switch (st) {
    case SL_FIT: return "fit";
    case SL_NOFIT: return "nofit";
    case SL_NOFIT_EVER: return "nofit_ever";
    case SL_WAIT: return "wait";
    case SL_SKIP: return "skip";
    }
    return "unknown";
}
