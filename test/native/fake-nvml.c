/*
 * A fake libnvidia-ml.so.1 for tailguard's tests: the NVML entry points the addon calls, with the same C
 * signatures, answering from a scenario file named by FAKE_NVML_SCENARIO (written by test/native/fake-nvml.ts
 * from a JSON-shaped scenario). Compile: cc -shared -fPIC -o libfake-nvml.so fake-nvml.c -lpthread
 * Define FAKE_OMIT_<function> to build a library that lacks that symbol (an older driver).
 *
 * Scenario lines (one directive per line, '#' comments):
 *   driver <version> | nvml <version> | init_error <nvmlReturn>
 *   device <index>            starts a device block; the lines below apply to it
 *   uuid <s> | name <rest of line> | pci <bus id>
 *   util_gpu|util_mem|mem_used|power_mw|energy_mj|temp_c|sm_clock|mem_clock|reasons|ecc_corrected|
 *   ecc_uncorrected|pcie_tx|pcie_rx <v1> <v2> ...   a curve: the n-th call answers vn (the last one repeats)
 *   mem_total <n> | mem_reserved <n>
 *   not_supported <field>...  util mem power energy temp clocks reasons ecc pcie procs proc_util mig events
 *   mig <current> <pending>
 *   mig_device <slot> <gpuInstanceId> <computeInstanceId> <uuid> <memTotal> <memUsed>
 *   proc <pid> <usedBytes> <gpuInstanceId> <computeInstanceId>
 *   proc_util <pid> <sm> <mem> <enc> <dec>
 *   lost_after <n>            after n utilization calls, every call on this device returns GPU_IS_LOST
 *   event <typeMask> <data> <delayMs> [<gpuInstanceId> <computeInstanceId>]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../native/nvml-types.h"

#define MAX_DEV 16
#define MAX_CURVE 64
#define MAX_ITEMS 32

enum { F_UTIL_GPU, F_UTIL_MEM, F_MEM_USED, F_POWER, F_ENERGY, F_TEMP, F_SM_CLOCK, F_MEM_CLOCK, F_REASONS,
       F_ECC_CORR, F_ECC_UNCORR, F_PCIE_TX, F_PCIE_RX, F_COUNT };
static const char *curveNames[F_COUNT] = {"util_gpu", "util_mem", "mem_used", "power_mw", "energy_mj",
                                          "temp_c", "sm_clock", "mem_clock", "reasons", "ecc_corrected",
                                          "ecc_uncorrected", "pcie_tx", "pcie_rx"};
enum { C_UTIL, C_MEM, C_POWER, C_ENERGY, C_TEMP, C_SM_CLOCK, C_MEM_CLOCK, C_REASONS, C_ECC_CORR, C_ECC_UNCORR,
       C_PCIE_TX, C_PCIE_RX, C_COUNT };
static const int curveCounter[F_COUNT] = {C_UTIL, C_UTIL, C_MEM, C_POWER, C_ENERGY, C_TEMP, C_SM_CLOCK,
                                          C_MEM_CLOCK, C_REASONS, C_ECC_CORR, C_ECC_UNCORR, C_PCIE_TX, C_PCIE_RX};

typedef struct { unsigned long long v[MAX_CURVE]; int n; } Curve;
typedef struct { unsigned int slot, gi, ci; char uuid[96]; unsigned long long total, used; } MigDev;
typedef struct { unsigned int pid, gi, ci; unsigned long long used; } Proc;
typedef struct { unsigned int pid, sm, mem, enc, dec; } ProcUtil;
typedef struct { int dev; unsigned long long type, data; long delayMs; unsigned int gi, ci; int delivered; } Event;

struct nvmlDevice_st {
  int index;
  int isMig;
  int parent;
  int migSlot;
};

typedef struct {
  char uuid[96], name[96], pci[32];
  Curve curves[F_COUNT];
  unsigned long long calls[C_COUNT];
  unsigned long long memTotal, memReserved;
  char notSupported[256];
  unsigned int migCurrent, migPending;
  MigDev mig[MAX_ITEMS];
  int nMig;
  Proc procs[MAX_ITEMS];
  int nProcs;
  ProcUtil putil[MAX_ITEMS];
  int nPutil;
  long lostAfter;
  int pcieCounters;                   /* 1: NVML_FI_DEV_PCIE_COUNT_{TX,RX}_BYTES answer */
  int energyField;                    /* 1: NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION answers */
  unsigned long long pcieBytes[2];    /* the counters, advanced one fake second per call */
  long long fieldClockUs;
  int isLost;
  struct nvmlDevice_st handle;
  struct nvmlDevice_st migHandles[MAX_ITEMS];
} Dev;

struct nvmlEventSet_st { unsigned long long mask[MAX_DEV]; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int loaded = 0, initCount = 0, nDev = 0, initError = 0;
static char driverVersion[80] = "0.0", nvmlVersion[80] = "0.0";
static Dev devs[MAX_DEV];
static Event events[MAX_ITEMS * 4];
static int nEvents = 0;
static struct timespec t0;

static long elapsedMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
}

static void parse(void) {
  const char *path = getenv("FAKE_NVML_SCENARIO");
  loaded = 1;
  if (path == NULL) return;
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  char line[1024];
  Dev *d = NULL;
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\r\n")] = 0;
    char key[64] = {0};
    int off = 0;
    if (sscanf(line, "%63s %n", key, &off) < 1 || key[0] == '#') continue;
    const char *rest = line + off;
    if (strcmp(key, "driver") == 0) snprintf(driverVersion, sizeof driverVersion, "%s", rest);
    else if (strcmp(key, "nvml") == 0) snprintf(nvmlVersion, sizeof nvmlVersion, "%s", rest);
    else if (strcmp(key, "init_error") == 0) initError = atoi(rest);
    else if (strcmp(key, "device") == 0) {
      int i = atoi(rest);
      if (i < 0 || i >= MAX_DEV) { d = NULL; continue; }
      if (i + 1 > nDev) nDev = i + 1;
      d = &devs[i];
      d->handle.index = i;
      d->handle.parent = -1;
      d->lostAfter = -1;
    } else if (d == NULL) continue;
    else if (strcmp(key, "uuid") == 0) snprintf(d->uuid, sizeof d->uuid, "%s", rest);
    else if (strcmp(key, "name") == 0) snprintf(d->name, sizeof d->name, "%s", rest);
    else if (strcmp(key, "pci") == 0) snprintf(d->pci, sizeof d->pci, "%s", rest);
    else if (strcmp(key, "mem_total") == 0) d->memTotal = strtoull(rest, NULL, 10);
    else if (strcmp(key, "mem_reserved") == 0) d->memReserved = strtoull(rest, NULL, 10);
    else if (strcmp(key, "not_supported") == 0) snprintf(d->notSupported, sizeof d->notSupported, " %s ", rest);
    else if (strcmp(key, "mig") == 0) sscanf(rest, "%u %u", &d->migCurrent, &d->migPending);
    else if (strcmp(key, "lost_after") == 0) d->lostAfter = atol(rest);
    else if (strcmp(key, "pcie_counters") == 0) d->pcieCounters = atoi(rest);
    else if (strcmp(key, "energy_field") == 0) d->energyField = atoi(rest);
    else if (strcmp(key, "mig_device") == 0 && d->nMig < MAX_ITEMS) {
      MigDev *m = &d->mig[d->nMig];
      if (sscanf(rest, "%u %u %u %95s %llu %llu", &m->slot, &m->gi, &m->ci, m->uuid, &m->total, &m->used) == 6) {
        struct nvmlDevice_st *h = &d->migHandles[d->nMig];
        h->index = d->handle.index;
        h->isMig = 1;
        h->parent = d->handle.index;
        h->migSlot = d->nMig;
        d->nMig++;
      }
    } else if (strcmp(key, "proc") == 0 && d->nProcs < MAX_ITEMS) {
      Proc *p = &d->procs[d->nProcs];
      if (sscanf(rest, "%u %llu %u %u", &p->pid, &p->used, &p->gi, &p->ci) == 4) d->nProcs++;
    } else if (strcmp(key, "proc_util") == 0 && d->nPutil < MAX_ITEMS) {
      ProcUtil *p = &d->putil[d->nPutil];
      if (sscanf(rest, "%u %u %u %u %u", &p->pid, &p->sm, &p->mem, &p->enc, &p->dec) == 5) d->nPutil++;
    } else if (strcmp(key, "event") == 0 && nEvents < MAX_ITEMS * 4) {
      Event *e = &events[nEvents];
      e->gi = 0xFFFFFFFFu;
      e->ci = 0xFFFFFFFFu;
      if (sscanf(rest, "%llu %llu %ld %u %u", &e->type, &e->data, &e->delayMs, &e->gi, &e->ci) >= 3) {
        e->dev = (int)(d - devs);
        nEvents++;
      }
    } else {
      for (int k = 0; k < F_COUNT; k++) {
        if (strcmp(key, curveNames[k]) != 0) continue;
        Curve *c = &d->curves[k];
        char *p = (char *)rest, *end;
        while (c->n < MAX_CURVE) {
          unsigned long long v = strtoull(p, &end, 10);
          if (end == p) break;
          c->v[c->n++] = v;
          p = end;
        }
      }
    }
  }
  fclose(f);
}

static int unsupported(Dev *d, const char *field) {
  char needle[40];
  snprintf(needle, sizeof needle, " %s ", field);
  return strstr(d->notSupported, needle) != NULL;
}

// The device falls off the bus at the start of its (lostAfter+1)-th utilization call, and stays lost.
static int lost(Dev *d) { return d->isLost; }

// Common checks for a device call: initialized, a known handle, not lost, the field supported.
static nvmlReturn_t check(nvmlDevice_t h, const char *field, Dev **out) {
  if (initCount == 0) return NVML_ERROR_UNINITIALIZED;
  if (h == NULL || h->index < 0 || h->index >= nDev) return NVML_ERROR_INVALID_ARGUMENT;
  Dev *d = &devs[h->index];
  if (lost(d)) return NVML_ERROR_GPU_IS_LOST;
  if (field != NULL && unsupported(d, field)) return NVML_ERROR_NOT_SUPPORTED;
  *out = d;
  return NVML_SUCCESS;
}

static unsigned long long next(Dev *d, int field) {
  Curve *c = &d->curves[field];
  if (c->n == 0) return 0;
  unsigned long long i = d->calls[curveCounter[field]];
  return c->v[i < (unsigned long long)c->n ? i : (unsigned long long)c->n - 1];
}

#define LOCKED(expr) do { pthread_mutex_lock(&mu); nvmlReturn_t r_ = (expr); pthread_mutex_unlock(&mu); return r_; } while (0)

const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "fake: success";
    case NVML_ERROR_UNINITIALIZED: return "fake: uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "fake: invalid argument";
    case NVML_ERROR_NOT_SUPPORTED: return "fake: not supported";
    case NVML_ERROR_NOT_FOUND: return "fake: not found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "fake: insufficient size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "fake: driver not loaded";
    case NVML_ERROR_TIMEOUT: return "fake: timeout";
    case NVML_ERROR_GPU_IS_LOST: return "fake: GPU is lost";
    default: return "fake: unknown error";
  }
}

static nvmlReturn_t doInit(void) {
  if (!loaded) parse();
  if (initError != 0) return initError;
  if (initCount++ == 0) clock_gettime(CLOCK_MONOTONIC, &t0);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlInit_v2(void) { LOCKED(doInit()); }

static nvmlReturn_t doShutdown(void) {
  if (initCount == 0) return NVML_ERROR_UNINITIALIZED;
  initCount--;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlShutdown(void) { LOCKED(doShutdown()); }

static nvmlReturn_t copyString(char *buf, unsigned int len, const char *s) {
  if (buf == NULL || strlen(s) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buf, s, strlen(s) + 1);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len) { LOCKED(copyString(v, len, driverVersion)); }
nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len) { LOCKED(copyString(v, len, nvmlVersion)); }

static nvmlReturn_t doCount(unsigned int *n) {
  if (initCount == 0) return NVML_ERROR_UNINITIALIZED;
  *n = (unsigned int)nDev;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { LOCKED(doCount(n)); }

static nvmlReturn_t doHandle(unsigned int i, nvmlDevice_t *h) {
  if (initCount == 0) return NVML_ERROR_UNINITIALIZED;
  if (i >= (unsigned int)nDev) return NVML_ERROR_INVALID_ARGUMENT;
  *h = &devs[i].handle;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h) { LOCKED(doHandle(i, h)); }

static nvmlReturn_t doUuid(nvmlDevice_t h, char *buf, unsigned int len) {
  Dev *d;
  nvmlReturn_t r = check(h, NULL, &d);
  if (r != NVML_SUCCESS) return r;
  return copyString(buf, len, h->isMig ? d->mig[h->migSlot].uuid : d->uuid);
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len) { LOCKED(doUuid(h, buf, len)); }

static nvmlReturn_t doName(nvmlDevice_t h, char *buf, unsigned int len) {
  Dev *d;
  nvmlReturn_t r = check(h, NULL, &d);
  return r != NVML_SUCCESS ? r : copyString(buf, len, d->name);
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len) { LOCKED(doName(h, buf, len)); }

static nvmlReturn_t doPci(nvmlDevice_t h, nvmlPciInfo_t *p) {
  Dev *d;
  nvmlReturn_t r = check(h, NULL, &d);
  if (r != NVML_SUCCESS) return r;
  memset(p, 0, sizeof *p);
  snprintf(p->busId, sizeof p->busId, "%s", d->pci);
  snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%.15s", d->pci);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *p) { LOCKED(doPci(h, p)); }

static nvmlReturn_t doMigMode(nvmlDevice_t h, unsigned int *cur, unsigned int *pend) {
  Dev *d;
  nvmlReturn_t r = check(h, "mig", &d);
  if (r != NVML_SUCCESS) return r;
  *cur = d->migCurrent;
  *pend = d->migPending;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned int *c, unsigned int *p) { LOCKED(doMigMode(h, c, p)); }

static nvmlReturn_t doMaxMig(nvmlDevice_t h, unsigned int *n) {
  Dev *d;
  nvmlReturn_t r = check(h, "mig", &d);
  if (r != NVML_SUCCESS) return r;
  *n = 7;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned int *n) { LOCKED(doMaxMig(h, n)); }

static nvmlReturn_t doMigByIndex(nvmlDevice_t h, unsigned int slot, nvmlDevice_t *m) {
  Dev *d;
  nvmlReturn_t r = check(h, "mig", &d);
  if (r != NVML_SUCCESS) return r;
  for (int i = 0; i < d->nMig; i++)
    if (d->mig[i].slot == slot) {
      *m = &d->migHandles[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned int i, nvmlDevice_t *m) {
  LOCKED(doMigByIndex(h, i, m));
}

static nvmlReturn_t doInstanceId(nvmlDevice_t h, unsigned int *id, int compute) {
  Dev *d;
  nvmlReturn_t r = check(h, NULL, &d);
  if (r != NVML_SUCCESS) return r;
  if (!h->isMig) return NVML_ERROR_INVALID_ARGUMENT;
  *id = compute ? d->mig[h->migSlot].ci : d->mig[h->migSlot].gi;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t h, unsigned int *id) { LOCKED(doInstanceId(h, id, 0)); }
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t h, unsigned int *id) { LOCKED(doInstanceId(h, id, 1)); }

static nvmlReturn_t doUtil(nvmlDevice_t h, nvmlUtilization_t *u) {
  Dev *d;
  if (initCount > 0 && h != NULL && h->index >= 0 && h->index < nDev) {
    Dev *t = &devs[h->index];
    if (t->lostAfter >= 0 && (long)t->calls[C_UTIL] >= t->lostAfter) t->isLost = 1;
  }
  nvmlReturn_t r = check(h, "util", &d);
  if (r != NVML_SUCCESS) return r;
  if (h->isMig) return NVML_ERROR_NOT_SUPPORTED; // as on real MIG devices
  u->gpu = (unsigned int)next(d, F_UTIL_GPU);
  u->memory = (unsigned int)next(d, F_UTIL_MEM);
  d->calls[C_UTIL]++;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u) { LOCKED(doUtil(h, u)); }

static nvmlReturn_t doMem(nvmlDevice_t h, unsigned long long *total, unsigned long long *reserved,
                          unsigned long long *used) {
  Dev *d;
  nvmlReturn_t r = check(h, "mem", &d);
  if (r != NVML_SUCCESS) return r;
  if (h->isMig) {
    *total = d->mig[h->migSlot].total;
    *reserved = 0;
    *used = d->mig[h->migSlot].used;
    return NVML_SUCCESS;
  }
  *total = d->memTotal;
  *reserved = d->memReserved;
  *used = next(d, F_MEM_USED);
  d->calls[C_MEM]++;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m) {
  unsigned long long total, reserved, used;
  pthread_mutex_lock(&mu);
  nvmlReturn_t r = doMem(h, &total, &reserved, &used);
  pthread_mutex_unlock(&mu);
  if (r == NVML_SUCCESS) {
    m->total = total;
    m->used = used + reserved; // v1 counts reserved memory as used
    m->free = total - m->used;
  }
  return r;
}
#ifndef FAKE_OMIT_nvmlDeviceGetMemoryInfo_v2
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m) {
  if (m->version != TG_NVML_MEMORY_V2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  unsigned long long total, reserved, used;
  pthread_mutex_lock(&mu);
  nvmlReturn_t r = doMem(h, &total, &reserved, &used);
  pthread_mutex_unlock(&mu);
  if (r == NVML_SUCCESS) {
    m->total = total;
    m->reserved = reserved;
    m->used = used;
    m->free = total - reserved - used;
  }
  return r;
}
#endif

static nvmlReturn_t doCurve(nvmlDevice_t h, const char *field, int curve, unsigned long long *v) {
  Dev *d;
  nvmlReturn_t r = check(h, field, &d);
  if (r != NVML_SUCCESS) return r;
  *v = next(d, curve);
  d->calls[curveCounter[curve]]++;
  return NVML_SUCCESS;
}
static nvmlReturn_t curveU32(nvmlDevice_t h, const char *field, int curve, unsigned int *out) {
  unsigned long long v = 0;
  pthread_mutex_lock(&mu);
  nvmlReturn_t r = doCurve(h, field, curve, &v);
  pthread_mutex_unlock(&mu);
  if (r == NVML_SUCCESS) *out = (unsigned int)v;
  return r;
}
static nvmlReturn_t curveU64(nvmlDevice_t h, const char *field, int curve, unsigned long long *out) {
  LOCKED(doCurve(h, field, curve, out));
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw) { return curveU32(h, "power", F_POWER, mw); }
#ifndef FAKE_OMIT_nvmlDeviceGetTotalEnergyConsumption
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj) {
  return curveU64(h, "energy", F_ENERGY, mj);
}
#endif
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int *t) {
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return curveU32(h, "temp", F_TEMP, t);
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *mhz) {
  if (type == NVML_CLOCK_SM) return curveU32(h, "clocks", F_SM_CLOCK, mhz);
  if (type == NVML_CLOCK_MEM) return curveU32(h, "clocks", F_MEM_CLOCK, mhz);
  return NVML_ERROR_INVALID_ARGUMENT;
}
#ifndef FAKE_OMIT_nvmlDeviceGetCurrentClocksEventReasons
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h, unsigned long long *reasons) {
  return curveU64(h, "reasons", F_REASONS, reasons);
}
#endif
#ifndef FAKE_OMIT_nvmlDeviceGetCurrentClocksThrottleReasons
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long *reasons) {
  return curveU64(h, "reasons", F_REASONS, reasons);
}
#endif
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int errorType, int counterType, unsigned long long *n) {
  if (counterType != NVML_VOLATILE_ECC && counterType != NVML_AGGREGATE_ECC) return NVML_ERROR_INVALID_ARGUMENT;
  return curveU64(h, "ecc", errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? F_ECC_CORR : F_ECC_UNCORR, n);
}
#ifndef FAKE_OMIT_nvmlDeviceGetPcieThroughput
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, int counter, unsigned int *kbps) {
  return curveU32(h, "pcie", counter == NVML_PCIE_UTIL_TX_BYTES ? F_PCIE_TX : F_PCIE_RX, kbps);
}
#endif

#ifndef FAKE_OMIT_nvmlDeviceGetFieldValues
/* The PCIe byte counters: each call is one second after the last (its timestamp), in which the counters grew by
 * the pcie_tx / pcie_rx curve's next value in KB/s, so the rate between two calls is that value. The energy counter
 * is the energy_mj curve. Other fields, or a device without pcie_counters / energy_field, answer NOT_SUPPORTED per
 * field, as a driver without them does. */
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int count, nvmlFieldValue_t *values) {
  if (count < 0 || (count > 0 && values == NULL)) return NVML_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&mu);
  Dev *d;
  nvmlReturn_t r = check(h, NULL, &d);
  if (r != NVML_SUCCESS) {
    pthread_mutex_unlock(&mu);
    return r;
  }
  int supported = d->pcieCounters && !unsupported(d, "pcie");
  int energy = d->energyField && !unsupported(d, "energy");
  if (supported) {
    if (d->pcieBytes[0] == 0) d->pcieBytes[0] = d->pcieBytes[1] = 1ULL << 40;
    d->fieldClockUs += 1000000;
  }
  for (int i = 0; i < count; i++) {
    nvmlFieldValue_t *f = &values[i];
    if (f->fieldId == NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION && energy) {
      f->nvmlReturn = NVML_SUCCESS;
      f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      f->value.ullVal = next(d, F_ENERGY);
      d->calls[C_ENERGY]++;
      continue;
    }
    int k = f->fieldId == NVML_FI_DEV_PCIE_COUNT_TX_BYTES ? 0 : f->fieldId == NVML_FI_DEV_PCIE_COUNT_RX_BYTES ? 1 : -1;
    if (k < 0 || !supported) {
      f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    d->pcieBytes[k] += next(d, k == 0 ? F_PCIE_TX : F_PCIE_RX) * 1024ULL;
    d->calls[k == 0 ? C_PCIE_TX : C_PCIE_RX]++;
    f->nvmlReturn = NVML_SUCCESS;
    f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    f->value.ullVal = d->pcieBytes[k];
    f->timestamp = 1700000000000000LL + d->fieldClockUs;
    f->latencyUsec = 0;
  }
  pthread_mutex_unlock(&mu);
  return NVML_SUCCESS;
}
#endif

static nvmlReturn_t doProcs(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
  Dev *d;
  nvmlReturn_t r = check(h, "procs", &d);
  if (r != NVML_SUCCESS) return r;
  if (*count < (unsigned int)d->nProcs || (infos == NULL && d->nProcs > 0)) {
    *count = (unsigned int)d->nProcs;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (int i = 0; i < d->nProcs; i++) {
    infos[i].pid = d->procs[i].pid;
    infos[i].usedGpuMemory = d->procs[i].used;
    infos[i].gpuInstanceId = d->procs[i].gi;
    infos[i].computeInstanceId = d->procs[i].ci;
  }
  *count = (unsigned int)d->nProcs;
  return NVML_SUCCESS;
}
#ifndef FAKE_OMIT_nvmlDeviceGetComputeRunningProcesses_v3
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *count,
                                                     nvmlProcessInfo_v2_t *infos) {
  LOCKED(doProcs(h, count, infos));
}
#endif

#ifndef FAKE_OMIT_nvmlDeviceGetProcessUtilization
static nvmlReturn_t doProcUtil(nvmlDevice_t h, nvmlProcessUtilizationSample_t *s, unsigned int *count,
                               unsigned long long since) {
  Dev *d;
  nvmlReturn_t r = check(h, "proc_util", &d);
  if (r != NVML_SUCCESS) return r;
  if (d->nPutil == 0) return NVML_ERROR_NOT_FOUND;
  if (s == NULL || *count < (unsigned int)d->nPutil) {
    *count = (unsigned int)d->nPutil;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  unsigned long long nowUs = (unsigned long long)now.tv_sec * 1000000ULL + (unsigned long long)now.tv_nsec / 1000ULL;
  for (int i = 0; i < d->nPutil; i++) {
    s[i].pid = d->putil[i].pid;
    s[i].timeStamp = nowUs > since ? nowUs : since + 1;
    s[i].smUtil = d->putil[i].sm;
    s[i].memUtil = d->putil[i].mem;
    s[i].encUtil = d->putil[i].enc;
    s[i].decUtil = d->putil[i].dec;
  }
  *count = (unsigned int)d->nPutil;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h, nvmlProcessUtilizationSample_t *s, unsigned int *count,
                                             unsigned long long since) {
  LOCKED(doProcUtil(h, s, count, since));
}
#endif

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
  if (initCount == 0) return NVML_ERROR_UNINITIALIZED;
  *set = (nvmlEventSet_t)calloc(1, sizeof(struct nvmlEventSet_st));
  return *set == NULL ? NVML_ERROR_MEMORY : NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  free(set);
  return NVML_SUCCESS;
}
static nvmlReturn_t doSupported(nvmlDevice_t h, unsigned long long *mask) {
  Dev *d;
  nvmlReturn_t r = check(h, "events", &d);
  if (r != NVML_SUCCESS) return r;
  *mask = nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypePState |
          nvmlEventTypeXidCriticalError | nvmlEventTypeClock;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t h, unsigned long long *mask) {
  LOCKED(doSupported(h, mask));
}
static nvmlReturn_t doRegister(nvmlDevice_t h, unsigned long long mask, nvmlEventSet_t set) {
  Dev *d;
  nvmlReturn_t r = check(h, "events", &d);
  if (r != NVML_SUCCESS) return r;
  set->mask[h->index] |= mask;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t h, unsigned long long mask, nvmlEventSet_t set) {
  LOCKED(doRegister(h, mask, set));
}

// One due event for this set, or GPU_IS_LOST when a registered device is gone, or TIMEOUT (1 = nothing yet).
static nvmlReturn_t pollEvent(nvmlEventSet_t set, nvmlEventData_t *data, long *nextDueMs) {
  if (initCount == 0) return NVML_ERROR_UNINITIALIZED;
  long now = elapsedMs();
  *nextDueMs = -1;
  for (int i = 0; i < nEvents; i++) {
    Event *e = &events[i];
    if (e->delivered || (set->mask[e->dev] & e->type) == 0) continue;
    if (e->delayMs <= now) {
      e->delivered = 1;
      data->device = &devs[e->dev].handle;
      data->eventType = e->type;
      data->eventData = e->data;
      data->gpuInstanceId = e->gi;
      data->computeInstanceId = e->ci;
      return NVML_SUCCESS;
    }
    if (*nextDueMs < 0 || e->delayMs < *nextDueMs) *nextDueMs = e->delayMs;
  }
  for (int i = 0; i < nDev; i++)
    if (set->mask[i] != 0 && lost(&devs[i])) return NVML_ERROR_GPU_IS_LOST;
  return NVML_ERROR_TIMEOUT;
}

static nvmlReturn_t waitEvent(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutMs) {
  long deadline = -1;
  for (;;) {
    long nextDue;
    pthread_mutex_lock(&mu);
    nvmlReturn_t r = pollEvent(set, data, &nextDue);
    long now = initCount > 0 ? elapsedMs() : 0;
    pthread_mutex_unlock(&mu);
    if (r != NVML_ERROR_TIMEOUT) return r;
    if (deadline < 0) deadline = now + (long)timeoutMs;
    if (now >= deadline) return NVML_ERROR_TIMEOUT;
    long until = deadline;
    if (nextDue >= 0 && nextDue < until) until = nextDue;
    long sleepMs = until - now;
    if (sleepMs < 1) sleepMs = 1;
    usleep((useconds_t)sleepMs * 1000);
  }
}
#ifndef FAKE_OMIT_nvmlEventSetWait_v2
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutMs) {
  return waitEvent(set, data, timeoutMs);
}
#endif
