/* A stand-in for libcuda.so.1's checkpoint calls, declared as cuda.h declares them (see
 * gq/gpu/cuda_checkpoint.py for the sources), for tests/test_gpu_checkpoint.py: it keeps each
 * pid's state, refuses steps from the wrong state as the driver does, and logs every call with
 * what it was given to the file named by FAKE_CUDA_LOG. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct { unsigned int timeoutMs; unsigned int reserved0; uint64_t reserved1[7]; } CUcheckpointLockArgs;
typedef struct { uint64_t reserved[8]; } CUcheckpointCheckpointArgs;
typedef struct { uint64_t reserved[8]; } CUcheckpointUnlockArgs;
typedef struct { char bytes[16]; } CUuuid;
typedef struct { CUuuid oldUuid; CUuuid newUuid; } CUcheckpointGpuPair;
typedef struct { CUcheckpointGpuPair *gpuPairs; unsigned int gpuPairsCount; char reserved[52]; } CUcheckpointRestoreArgs;

enum { RUNNING = 0, LOCKED = 1, CHECKPOINTED = 2, FAILED = 3 };
enum { SUCCESS = 0, NOT_INITIALIZED = 3, ILLEGAL_STATE = 401, TIMEOUT = 909 };
#define STUCK_PID 999 /* a process whose lock always times out */

static int initialised, pids[64], states[64], n;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void say(const char *fmt, ...) {
    const char *path = getenv("FAKE_CUDA_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static int *state_of(int pid) {
    for (int i = 0; i < n; i++) if (pids[i] == pid) return &states[i];
    pids[n] = pid; states[n] = RUNNING;
    return &states[n++];
}

static int zero(const void *p, size_t size) {
    const unsigned char *b = p;
    for (size_t i = 0; i < size; i++) if (b[i]) return 0;
    return 1;
}

static CUresult step(int pid, int from, int to) {
    if (!initialised) return NOT_INITIALIZED;
    int *s = state_of(pid);
    if (*s != from) return ILLEGAL_STATE;
    *s = to;
    return SUCCESS;
}

CUresult cuInit(unsigned int flags) { initialised = flags == 0; say("init %u", flags); return SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 12080; return SUCCESS; }
CUresult cuGetErrorName(CUresult r, const char **name) {
    *name = r == ILLEGAL_STATE ? "CUDA_ERROR_ILLEGAL_STATE" : r == TIMEOUT ? "CUDA_ERROR_TIMEOUT"
          : r == NOT_INITIALIZED ? "CUDA_ERROR_NOT_INITIALIZED" : "CUDA_ERROR_UNKNOWN";
    return SUCCESS;
}

CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *a) {
    say("lock %d timeoutMs %u reserved_zero %d", pid, a ? a->timeoutMs : 0,
        a ? a->reserved0 == 0 && zero(a->reserved1, sizeof a->reserved1) : 1);
    if (pid == STUCK_PID) return TIMEOUT;
    return step(pid, RUNNING, LOCKED);
}

CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *a) {
    say("checkpoint %d reserved_zero %d", pid, a ? zero(a, sizeof *a) : 1);
    return step(pid, LOCKED, CHECKPOINTED);
}

CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *a) {
    char old[33] = "", new[33] = "";
    if (a && a->gpuPairsCount) {
        for (int i = 0; i < 16; i++) {
            sprintf(old + 2 * i, "%02x", (unsigned char)a->gpuPairs[0].oldUuid.bytes[i]);
            sprintf(new + 2 * i, "%02x", (unsigned char)a->gpuPairs[0].newUuid.bytes[i]);
        }
    }
    say("restore %d pairs %u old %s new %s reserved_zero %d", pid, a ? a->gpuPairsCount : 0,
        old, new, a ? zero(a->reserved, sizeof a->reserved) : 1);
    return step(pid, CHECKPOINTED, LOCKED);
}

CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *a) {
    say("unlock %d reserved_zero %d", pid, a ? zero(a, sizeof *a) : 1);
    return step(pid, LOCKED, RUNNING);
}

CUresult cuCheckpointProcessGetState(int pid, int *state) {
    if (!initialised) return NOT_INITIALIZED;
    *state = *state_of(pid);
    return SUCCESS;
}
