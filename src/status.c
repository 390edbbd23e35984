/* Status strings, version, dtype sizes and backend names. */
#include "unifuse.h"

const char *uf_status_string(uf_status status)
{
    switch (status) {
    case UF_OK:
        return "success";
    case UF_ERR_NULL_POINTER:
        return "a required pointer is NULL";
    case UF_ERR_BAD_DTYPE:
        return "unsupported dtype";
    case UF_ERR_BAD_SHAPE:
        return "invalid shape (dimension count, negative extent or broadcast mismatch)";
    case UF_ERR_BAD_VALUE:
        return "scalar argument out of range";
    case UF_ERR_OVERFLOW:
        return "size overflows 64-bit indexing or size_t";
    case UF_ERR_ALIAS:
        return "buffers overlap in a way the call does not allow";
    case UF_ERR_NO_DEVICE:
        return "no usable device";
    case UF_ERR_OUT_OF_MEMORY:
        return "out of memory";
    case UF_ERR_LAUNCH:
        return "kernel launch failed";
    case UF_ERR_DEVICE:
        return "device runtime error";
    case UF_ERR_BAD_ARGUMENT:
        return "invalid argument";
    }
    return "unknown status";
}

#define UF_STR_(x) #x
#define UF_STR(x) UF_STR_(x)

const char *uf_version(void)
{
    return UF_STR(UF_VERSION_MAJOR) "." UF_STR(UF_VERSION_MINOR) "." UF_STR(UF_VERSION_PATCH);
}

size_t uf_dtype_size(uf_dtype dtype)
{
    switch (dtype) {
    case UF_F32:
        return 4;
    case UF_F16:
    case UF_BF16:
        return 2;
    case UF_F64:
        return 8;
    case UF_BOOL:
        return 1;
    case UF_DTYPE_NONE:
        return 0;
    }
    return 0;
}

const char *uf_backend_name(uf_backend backend)
{
    switch (backend) {
    case UF_BACKEND_CPU:
        return "openmp";
    case UF_BACKEND_CUDA:
        return "cuda";
    case UF_BACKEND_HIP:
        return "hip";
    }
    return "unknown";
}
