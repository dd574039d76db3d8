/* SPDX-License-Identifier: Apache-2.0 */
/* Status names, OpenCL error names, and where failure messages and informational notes are recorded. */
#include "fa_cl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(_MSC_VER)
#define FA_CL_THREAD_LOCAL __declspec(thread)
#else
#define FA_CL_THREAD_LOCAL _Thread_local
#endif

/* Failures that have no context to hold them (context creation) land here, one slot per thread. */
static FA_CL_THREAD_LOCAL char thread_error[FA_CL_ERROR_CAPACITY];
/* fa_cl_last_error(ctx) returns a copy of ctx's message taken under its lock: another thread may be
 * writing ctx->last_error at the same time (a failing call on the shared context), and handing out
 * ctx->last_error itself let a reader see it half overwritten. */
static FA_CL_THREAD_LOCAL char thread_copy[FA_CL_ERROR_CAPACITY];

const char *fa_cl_version(void) { return FA_CL_VERSION_STRING; }

const char *fa_cl_status_string(fa_cl_status s)
{
    switch (s) {
    case FA_CL_SUCCESS: return "FA_CL_SUCCESS";
    case FA_CL_ERROR_INVALID_ARGUMENT: return "FA_CL_ERROR_INVALID_ARGUMENT";
    case FA_CL_ERROR_UNSUPPORTED: return "FA_CL_ERROR_UNSUPPORTED";
    case FA_CL_ERROR_BUFFER_TOO_SMALL: return "FA_CL_ERROR_BUFFER_TOO_SMALL";
    case FA_CL_ERROR_BUILD_FAILED: return "FA_CL_ERROR_BUILD_FAILED";
    case FA_CL_ERROR_OPENCL: return "FA_CL_ERROR_OPENCL";
    case FA_CL_ERROR_OUT_OF_MEMORY: return "FA_CL_ERROR_OUT_OF_MEMORY";
    case FA_CL_ERROR_NO_DEVICE: return "FA_CL_ERROR_NO_DEVICE";
    case FA_CL_ERROR_COMMUNICATION: return "FA_CL_ERROR_COMMUNICATION";
    }
    return "FA_CL_ERROR_UNKNOWN_STATUS";
}

const char *fa_cl__cl_error_name(cl_int err)
{
#define FA_CL_NAME(e) case e: return #e;
    switch (err) {
    FA_CL_NAME(CL_SUCCESS)
    FA_CL_NAME(CL_DEVICE_NOT_FOUND)
    FA_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
    FA_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
    FA_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    FA_CL_NAME(CL_OUT_OF_RESOURCES)
    FA_CL_NAME(CL_OUT_OF_HOST_MEMORY)
    FA_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    FA_CL_NAME(CL_MEM_COPY_OVERLAP)
    FA_CL_NAME(CL_IMAGE_FORMAT_MISMATCH)
    FA_CL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    FA_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
    FA_CL_NAME(CL_MAP_FAILURE)
    FA_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    FA_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    FA_CL_NAME(CL_COMPILE_PROGRAM_FAILURE)
    FA_CL_NAME(CL_LINKER_NOT_AVAILABLE)
    FA_CL_NAME(CL_LINK_PROGRAM_FAILURE)
    FA_CL_NAME(CL_DEVICE_PARTITION_FAILED)
    FA_CL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    FA_CL_NAME(CL_INVALID_VALUE)
    FA_CL_NAME(CL_INVALID_DEVICE_TYPE)
    FA_CL_NAME(CL_INVALID_PLATFORM)
    FA_CL_NAME(CL_INVALID_DEVICE)
    FA_CL_NAME(CL_INVALID_CONTEXT)
    FA_CL_NAME(CL_INVALID_QUEUE_PROPERTIES)
    FA_CL_NAME(CL_INVALID_COMMAND_QUEUE)
    FA_CL_NAME(CL_INVALID_HOST_PTR)
    FA_CL_NAME(CL_INVALID_MEM_OBJECT)
    FA_CL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    FA_CL_NAME(CL_INVALID_IMAGE_SIZE)
    FA_CL_NAME(CL_INVALID_SAMPLER)
    FA_CL_NAME(CL_INVALID_BINARY)
    FA_CL_NAME(CL_INVALID_BUILD_OPTIONS)
    FA_CL_NAME(CL_INVALID_PROGRAM)
    FA_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    FA_CL_NAME(CL_INVALID_KERNEL_NAME)
    FA_CL_NAME(CL_INVALID_KERNEL_DEFINITION)
    FA_CL_NAME(CL_INVALID_KERNEL)
    FA_CL_NAME(CL_INVALID_ARG_INDEX)
    FA_CL_NAME(CL_INVALID_ARG_VALUE)
    FA_CL_NAME(CL_INVALID_ARG_SIZE)
    FA_CL_NAME(CL_INVALID_KERNEL_ARGS)
    FA_CL_NAME(CL_INVALID_WORK_DIMENSION)
    FA_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    FA_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    FA_CL_NAME(CL_INVALID_GLOBAL_OFFSET)
    FA_CL_NAME(CL_INVALID_EVENT_WAIT_LIST)
    FA_CL_NAME(CL_INVALID_EVENT)
    FA_CL_NAME(CL_INVALID_OPERATION)
    FA_CL_NAME(CL_INVALID_GL_OBJECT)
    FA_CL_NAME(CL_INVALID_BUFFER_SIZE)
    FA_CL_NAME(CL_INVALID_MIP_LEVEL)
    FA_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    FA_CL_NAME(CL_INVALID_PROPERTY)
    FA_CL_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    FA_CL_NAME(CL_INVALID_COMPILER_OPTIONS)
    FA_CL_NAME(CL_INVALID_LINKER_OPTIONS)
    FA_CL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
    }
#undef FA_CL_NAME
}

static void record(fa_cl_context *ctx, const char *text)
{
    if (ctx) {
        fa_cl__lock_acquire(&ctx->lock);
        snprintf(ctx->last_error, sizeof ctx->last_error, "%s", text);
        fa_cl__lock_release(&ctx->lock);
    } else {
        snprintf(thread_error, sizeof thread_error, "%s", text);
    }
}

fa_cl_status fa_cl__fail(fa_cl_context *ctx, fa_cl_status status, const char *fmt, ...)
{
    char text[FA_CL_ERROR_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    record(ctx, text);
    return status;
}

void fa_cl__append(char *buf, size_t size, const char *fmt, ...)
{
    const size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

fa_cl_status fa_cl__fail_cl(fa_cl_context *ctx, cl_int err, const char *what)
{
    fa_cl_status s = FA_CL_ERROR_OPENCL;
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
        s = FA_CL_ERROR_OUT_OF_MEMORY;
    return fa_cl__fail(ctx, s, "%s: %s (%d)", what, fa_cl__cl_error_name(err), (int)err);
}

const char *fa_cl_last_error(const fa_cl_context *ctx)
{
    if (!ctx)
        return thread_error;
    fa_cl_context *c = (fa_cl_context *)ctx; /* the lock is not part of the context's value */
    fa_cl__lock_acquire(&c->lock);
    memcpy(thread_copy, c->last_error, sizeof thread_copy);
    fa_cl__lock_release(&c->lock);
    return thread_copy;
}

void fa_cl__note(fa_cl_context *ctx, const char *fmt, ...)
{
    static const char full[] = "(further notes dropped)\n";
    char line[1024];
    if (!fmt) /* never, but GCC's -fsanitize builds warn about a possibly null format otherwise */
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fa_cl__lock_acquire(&ctx->lock);
    size_t used = strlen(ctx->notes), n = strlen(line);
    /* keep room for the "dropped" line, so the notes never end mid-sentence */
    if (used + n + 1 + sizeof full <= sizeof ctx->notes) {
        memcpy(ctx->notes + used, line, n);
        ctx->notes[used + n] = '\n';
        ctx->notes[used + n + 1] = '\0';
    } else if (used + sizeof full <= sizeof ctx->notes && !strstr(ctx->notes, full)) {
        memcpy(ctx->notes + used, full, sizeof full);
    }
    fa_cl__lock_release(&ctx->lock);
}

const char *fa_cl_context_notes(const fa_cl_context *ctx)
{
    return ctx ? ctx->notes : "";
}
