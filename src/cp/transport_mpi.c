/* SPDX-License-Identifier: Apache-2.0 */
/* The MPI transport (include/fa_cl_cp.h): non-blocking MPI on a duplicate of the caller's
 * communicator whose errors return (MPI_ERRORS_RETURN) instead of aborting the job, so that a
 * failed peer is an error the library can report; every request is a heap MPI_Request beside
 * whether it is a collective's (those cannot be cancelled). */
#include "cp/cp_internal.h"

#include <limits.h>
#include <stdlib.h>

typedef struct mpi_transport {
    fa_cl_cp_transport t;
    MPI_Comm comm;
} mpi_transport;

/* A request: the MPI_Request first (the pointer is used as one), then its kind. */
typedef struct mpi_request {
    MPI_Request r;
    int collective;
} mpi_request;

static MPI_Request *request_new(void **out, int collective)
{
    mpi_request *q = (mpi_request *)malloc(sizeof *q);
    MPI_Request *r = q ? &q->r : NULL;
    if (q) {
        q->r = MPI_REQUEST_NULL;
        q->collective = collective;
    }
    *out = q;
    return r;
}

/* The request's MPI result: its memory freed when the call failed (nothing to wait for then). */
static int started(int rc, MPI_Request *r)
{
    if (rc != MPI_SUCCESS)
        free(r);
    return rc;
}

static int mpi_isend(void *user, const void *buf, size_t bytes, int peer, int tag, void **request)
{
    MPI_Request *r = request_new(request, 0);
    if (!r || bytes > INT_MAX)
        return free(r), -1;
    return started(MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, ((mpi_transport *)user)->comm, r), r);
}

static int mpi_irecv(void *user, void *buf, size_t bytes, int peer, int tag, void **request)
{
    MPI_Request *r = request_new(request, 0);
    if (!r || bytes > INT_MAX)
        return free(r), -1;
    return started(MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, ((mpi_transport *)user)->comm, r), r);
}

static int mpi_ialltoall(void *user, const void *send, void *recv, size_t bytes, void **request)
{
    MPI_Request *r = request_new(request, 1);
    if (!r || bytes > INT_MAX)
        return free(r), -1;
    return started(MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, ((mpi_transport *)user)->comm,
                                 r), r);
}

static int mpi_iallreduce_max(void *user, const uint64_t *in, uint64_t *out, int count, void **request)
{
    MPI_Request *r = request_new(request, 1);
    if (!r)
        return -1;
    return started(MPI_Iallreduce(in, out, count, MPI_UINT64_T, MPI_MAX, ((mpi_transport *)user)->comm, r), r);
}

static int mpi_test(void *user, void *request, int *done)
{
    (void)user;
    MPI_Request *r = (MPI_Request *)request;
    int flag = 0;
    const int rc = MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    *done = rc == MPI_SUCCESS && flag;
    if (rc != MPI_SUCCESS || flag)
        free(r); /* completed, or failed: MPI holds nothing of it any more */
    return rc;
}

/* A request given up on: a point-to-point one cancelled (receives; Open MPI also cancels unmatched
 * sends) and released to MPI whenever it completes; a collective's can be neither (MPI_Cancel and
 * MPI_Request_free are erroneous on them): left to MPI, its small record kept. */
static void mpi_abandon(void *user, void *request)
{
    (void)user;
    mpi_request *q = (mpi_request *)request;
    if (q->collective && q->r != MPI_REQUEST_NULL)
        return; /* never completes with a dead peer: its memory stays MPI's */
    if (q->r != MPI_REQUEST_NULL) {
        MPI_Cancel(&q->r);
        MPI_Request_free(&q->r);
    }
    free(q);
}

fa_cl_status fa_cl_cp_transport_mpi(MPI_Comm comm, fa_cl_cp_transport **out)
{
    if (!out)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_cp_transport_mpi: out is NULL");
    *out = NULL;
    int init = 0;
    MPI_Initialized(&init);
    if (!init)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_cp_transport_mpi: MPI is not initialised");
    mpi_transport *m = (mpi_transport *)calloc(1, sizeof *m);
    if (!m)
        return fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_transport_mpi: out of host memory");
    int rc = MPI_Comm_dup(comm, &m->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(m->comm, &m->t.rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(m->comm, &m->t.size);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, text, &len);
        free(m);
        return fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_transport_mpi: %s", text);
    }
    m->t.struct_size = sizeof m->t;
    m->t.user = m;
    m->t.isend = mpi_isend;
    m->t.irecv = mpi_irecv;
    m->t.ialltoall = mpi_ialltoall;
    m->t.iallreduce_max = mpi_iallreduce_max;
    m->t.test = mpi_test;
    m->t.abandon = mpi_abandon;
    *out = &m->t;
    return FA_CL_SUCCESS;
}

void fa_cl_cp_transport_mpi_release(fa_cl_cp_transport *t)
{
    if (!t)
        return;
    mpi_transport *m = (mpi_transport *)t->user;
    MPI_Comm_free(&m->comm);
    free(m);
}
