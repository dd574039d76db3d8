/* SPDX-License-Identifier: Apache-2.0 */
/* A mutex that works with pthreads and on Windows; the library's only threading primitive. */
#ifndef FA_CL_LOCK_H
#define FA_CL_LOCK_H

#if defined(_WIN32)
#include <windows.h>
typedef SRWLOCK fa_cl__lock;
static inline void fa_cl__lock_init(fa_cl__lock *l) { InitializeSRWLock(l); }
static inline void fa_cl__lock_destroy(fa_cl__lock *l) { (void)l; }
static inline void fa_cl__lock_acquire(fa_cl__lock *l) { AcquireSRWLockExclusive(l); }
static inline void fa_cl__lock_release(fa_cl__lock *l) { ReleaseSRWLockExclusive(l); }
#else
#include <pthread.h>
typedef pthread_mutex_t fa_cl__lock;
static inline void fa_cl__lock_init(fa_cl__lock *l) { pthread_mutex_init(l, NULL); }
static inline void fa_cl__lock_destroy(fa_cl__lock *l) { pthread_mutex_destroy(l); }
static inline void fa_cl__lock_acquire(fa_cl__lock *l) { pthread_mutex_lock(l); }
static inline void fa_cl__lock_release(fa_cl__lock *l) { pthread_mutex_unlock(l); }
#endif

#endif /* FA_CL_LOCK_H */
