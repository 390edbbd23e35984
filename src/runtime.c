/* The public runtime surface: argument checks, then the backend's glue. */
#include "backend.h"

uf_status uf_get_device_info(uf_device_info *info)
{
    return info ? ufb_device_info(info) : UF_ERR_NULL_POINTER;
}

uf_status uf_device_count(int *count)
{
    return count ? ufb_device_count(count) : UF_ERR_NULL_POINTER;
}

uf_status uf_set_device(int device)
{
    int count = 0;
    const uf_status st = ufb_device_count(&count);
    if (st != UF_OK)
        return st;
    return device >= 0 && device < count ? ufb_set_device(device) : UF_ERR_NO_DEVICE;
}

uf_status uf_get_device(int *device)
{
    return device ? ufb_get_device(device) : UF_ERR_NULL_POINTER;
}

uf_status uf_stream_device(uf_stream stream, int *device)
{
    return device ? ufb_stream_device(stream, device) : UF_ERR_NULL_POINTER;
}

uf_status uf_malloc(void **ptr, size_t bytes)
{
    if (!ptr)
        return UF_ERR_NULL_POINTER;
    *ptr = NULL;
    return bytes == 0 ? UF_OK : ufb_malloc(ptr, bytes);
}

uf_status uf_free(void *ptr)
{
    return ptr ? ufb_free(ptr) : UF_OK;
}

static int valid_copy_kind(uf_copy_kind kind)
{
    return kind == UF_HOST_TO_DEVICE || kind == UF_DEVICE_TO_HOST || kind == UF_DEVICE_TO_DEVICE ||
           kind == UF_HOST_TO_HOST;
}

uf_status uf_memcpy(void *dst, const void *src, size_t bytes, uf_copy_kind kind, uf_stream stream)
{
    if (!valid_copy_kind(kind))
        return UF_ERR_BAD_ARGUMENT;
    if (bytes == 0)
        return UF_OK;
    if (!dst || !src)
        return UF_ERR_NULL_POINTER;
    uf_device_scope scope;
    uf_status st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = ufb_memcpy(dst, src, bytes, kind, stream);
    return ufb_scope_leave(&scope, st);
}

uf_status uf_memset(void *dst, int value, size_t bytes, uf_stream stream)
{
    if (bytes == 0)
        return UF_OK;
    if (!dst)
        return UF_ERR_NULL_POINTER;
    uf_device_scope scope;
    uf_status st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = ufb_memset(dst, value, bytes, stream);
    return ufb_scope_leave(&scope, st);
}

uf_status uf_stream_create(uf_stream *stream)
{
    return stream ? ufb_stream_create(stream) : UF_ERR_NULL_POINTER;
}

uf_status uf_stream_destroy(uf_stream stream)
{
    return stream ? ufb_stream_destroy(stream) : UF_ERR_BAD_ARGUMENT;
}

uf_status uf_stream_synchronize(uf_stream stream)
{
    return ufb_stream_synchronize(stream);
}

uf_status uf_device_synchronize(void)
{
    return ufb_device_synchronize();
}

uf_status uf_event_create(uf_event *event)
{
    return event ? ufb_event_create(event) : UF_ERR_NULL_POINTER;
}

uf_status uf_event_destroy(uf_event event)
{
    return event ? ufb_event_destroy(event) : UF_ERR_BAD_ARGUMENT;
}

uf_status uf_event_record(uf_event event, uf_stream stream)
{
    if (!event)
        return UF_ERR_BAD_ARGUMENT;
    uf_device_scope scope;
    uf_status st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = ufb_event_record(event, stream);
    return ufb_scope_leave(&scope, st);
}

uf_status uf_event_elapsed_ms(uf_event start, uf_event end, float *ms)
{
    if (!start || !end)
        return UF_ERR_BAD_ARGUMENT;
    return ms ? ufb_event_elapsed_ms(start, end, ms) : UF_ERR_NULL_POINTER;
}
