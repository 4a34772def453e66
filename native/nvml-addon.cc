// tailguard_nvml: a Node-API addon that reads GPU counters through NVML, loaded with dlopen at run time.
//
// It builds with no CUDA and no GPU (nvml-types.h declares what it calls). Every entry point is looked up with
// dlsym: a missing one makes its field "unsupported" instead of failing the load. NVML_ERROR_NOT_SUPPORTED leaves
// a field out of the sample. NVML errors reach JavaScript as Error objects with `code` (e.g.
// "NVML_ERROR_GPU_IS_LOST"), `nvmlReturn` (the number) and NVML's own error string in the message.
// Events (XID and other critical errors) are waited on by a native thread and delivered through a thread-safe
// function, so nvmlEventSetWait never runs on the event loop.

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <napi.h>

#include "nvml-types.h"

namespace {

typedef nvmlReturn_t (*FnVoid)();
typedef const char *(*FnErrorString)(nvmlReturn_t);
typedef nvmlReturn_t (*FnUIntPtr)(unsigned int *);
typedef nvmlReturn_t (*FnCharBuf)(char *, unsigned int);
typedef nvmlReturn_t (*FnHandleByIndex)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*FnDevCharBuf)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*FnDevPci)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*FnDevUIntPtr)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*FnDevUInt2Ptr)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*FnDevULLPtr)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*FnDevMigByIndex)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*FnDevUtil)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*FnDevMem)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*FnDevMemV2)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*FnDevTemp)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*FnDevClock)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*FnDevEcc)(nvmlDevice_t, int, int, unsigned long long *);
typedef nvmlReturn_t (*FnDevPcie)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*FnDevProcsV1)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *);
typedef nvmlReturn_t (*FnDevProcsV2)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *);
typedef nvmlReturn_t (*FnDevProcUtil)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                                      unsigned long long);
typedef nvmlReturn_t (*FnEventSetCreate)(nvmlEventSet_t *);
typedef nvmlReturn_t (*FnEventSetFree)(nvmlEventSet_t);
typedef nvmlReturn_t (*FnRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
typedef nvmlReturn_t (*FnEventSetWait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);

struct Api {
  void *lib = nullptr;
  std::string path;
  FnVoid init = nullptr;
  FnVoid shutdown = nullptr;
  FnErrorString errorString = nullptr;
  FnUIntPtr deviceCount = nullptr;
  FnCharBuf driverVersion = nullptr;
  FnCharBuf nvmlVersion = nullptr;
  FnHandleByIndex handleByIndex = nullptr;
  FnDevCharBuf uuid = nullptr;
  FnDevCharBuf name = nullptr;
  FnDevPci pciInfo = nullptr;
  FnDevUInt2Ptr migMode = nullptr;
  FnDevUIntPtr maxMigDeviceCount = nullptr;
  FnDevMigByIndex migDeviceByIndex = nullptr;
  FnDevUIntPtr gpuInstanceId = nullptr;
  FnDevUIntPtr computeInstanceId = nullptr;
  FnDevUtil utilization = nullptr;
  FnDevMem memory = nullptr;
  FnDevMemV2 memoryV2 = nullptr;
  FnDevUIntPtr power = nullptr;
  FnDevULLPtr energy = nullptr;
  FnDevTemp temperature = nullptr;
  FnDevClock clock = nullptr;
  FnDevULLPtr clockEventReasons = nullptr;
  FnDevEcc ecc = nullptr;
  FnDevPcie pcie = nullptr;
  FnDevProcsV2 procsV2 = nullptr; // _v3 or _v2: both take the v2 struct
  FnDevProcsV1 procsV1 = nullptr;
  FnDevProcUtil procUtil = nullptr;
  FnEventSetCreate eventSetCreate = nullptr;
  FnEventSetFree eventSetFree = nullptr;
  FnRegisterEvents registerEvents = nullptr;
  FnDevULLPtr supportedEventTypes = nullptr;
  FnEventSetWait eventSetWait = nullptr;
};

Api api;
std::mutex apiMutex; // guards initialized/handles against the event thread
bool initialized = false;
std::vector<nvmlDevice_t> handles;

template <typename T> T sym(const char *name) { return reinterpret_cast<T>(dlsym(api.lib, name)); }
template <typename T> T sym2(const char *a, const char *b) {
  T f = sym<T>(a);
  return f != nullptr ? f : sym<T>(b);
}

const char *codeName(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED: return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT: return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED: return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION: return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED: return "NVML_ERROR_ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND: return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER: return "NVML_ERROR_INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT: return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE: return "NVML_ERROR_IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM: return "NVML_ERROR_CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST: return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED: return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM: return "NVML_ERROR_OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE: return "NVML_ERROR_IN_USE";
    case NVML_ERROR_MEMORY: return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA: return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED: return "NVML_ERROR_DEPRECATED";
    case NVML_ERROR_NOT_READY: return "NVML_ERROR_NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND: return "NVML_ERROR_GPU_NOT_FOUND";
    case NVML_ERROR_INVALID_STATE: return "NVML_ERROR_INVALID_STATE";
    default: return "NVML_ERROR_UNKNOWN";
  }
}

std::string errorText(nvmlReturn_t r) {
  const char *s = api.errorString != nullptr ? api.errorString(r) : nullptr;
  return s != nullptr ? std::string(s) : std::string(codeName(r));
}

Napi::Error nvmlError(Napi::Env env, const char *fn, nvmlReturn_t r) {
  Napi::Error e = Napi::Error::New(env, std::string(fn) + ": " + errorText(r));
  e.Set("code", Napi::String::New(env, codeName(r)));
  e.Set("nvmlReturn", Napi::Number::New(env, r));
  e.Set("nvmlFunction", Napi::String::New(env, fn));
  e.Set("nvmlMessage", Napi::String::New(env, errorText(r)));
  return e;
}

Napi::Error plainError(Napi::Env env, const char *code, const std::string &message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

void requireInit(Napi::Env env) {
  if (!initialized) throw plainError(env, "TG_NVML_NOT_INITIALIZED", "NVML is not initialized: call init() first");
}

nvmlDevice_t device(const Napi::CallbackInfo &info) {
  requireInit(info.Env());
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(info.Env(), "device index expected");
  int64_t i = info[0].As<Napi::Number>().Int64Value();
  if (i < 0 || static_cast<size_t>(i) >= handles.size())
    throw plainError(info.Env(), "TG_NVML_BAD_INDEX", "no GPU at index " + std::to_string(i));
  return handles[static_cast<size_t>(i)];
}

// A per-field call's outcome: success sets the field, NOT_SUPPORTED leaves it out, GPU_IS_LOST throws (the whole
// device is gone), anything else goes into `fieldErrors` so the other fields still arrive.
struct FieldContext {
  Napi::Env env;
  Napi::Object out;
  Napi::Array unsupported;
  Napi::Object fieldErrors;
  uint32_t nUnsupported = 0;
  bool anyFieldError = false;

  void missing(const char *field) { unsupported.Set(nUnsupported++, Napi::String::New(env, field)); }
  bool ok(const char *fn, const char *field, nvmlReturn_t r) {
    if (r == NVML_SUCCESS) return true;
    if (r == NVML_ERROR_NOT_SUPPORTED) return false;
    if (r == NVML_ERROR_GPU_IS_LOST) throw nvmlError(env, fn, r);
    fieldErrors.Set(field, Napi::String::New(env, std::string(codeName(r)) + ": " + errorText(r)));
    anyFieldError = true;
    return false;
  }
  void num(const char *key, double v) { out.Set(key, Napi::Number::New(env, v)); }
};

// ---- load / init / shutdown ----

Napi::Value Load(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (api.lib != nullptr) return Napi::String::New(env, api.path);
  std::string path = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value()
                                                              : std::string("libnvidia-ml.so.1");
  dlerror();
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char *why = dlerror();
    throw plainError(env, "TG_NVML_DLOPEN", std::string("dlopen ") + path + ": " + (why ? why : "unknown error"));
  }
  api.lib = lib;
  api.path = path;
  api.init = sym2<FnVoid>("nvmlInit_v2", "nvmlInit");
  api.shutdown = sym<FnVoid>("nvmlShutdown");
  api.errorString = sym<FnErrorString>("nvmlErrorString");
  api.deviceCount = sym2<FnUIntPtr>("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  api.handleByIndex = sym2<FnHandleByIndex>("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  if (api.init == nullptr || api.shutdown == nullptr || api.deviceCount == nullptr || api.handleByIndex == nullptr) {
    dlclose(lib);
    api = Api();
    throw plainError(env, "TG_NVML_SYMBOLS",
                     path + " lacks nvmlInit/nvmlShutdown/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex");
  }
  api.driverVersion = sym<FnCharBuf>("nvmlSystemGetDriverVersion");
  api.nvmlVersion = sym<FnCharBuf>("nvmlSystemGetNVMLVersion");
  api.uuid = sym<FnDevCharBuf>("nvmlDeviceGetUUID");
  api.name = sym<FnDevCharBuf>("nvmlDeviceGetName");
  api.pciInfo = sym2<FnDevPci>("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
  api.migMode = sym<FnDevUInt2Ptr>("nvmlDeviceGetMigMode");
  api.maxMigDeviceCount = sym<FnDevUIntPtr>("nvmlDeviceGetMaxMigDeviceCount");
  api.migDeviceByIndex = sym<FnDevMigByIndex>("nvmlDeviceGetMigDeviceHandleByIndex");
  api.gpuInstanceId = sym<FnDevUIntPtr>("nvmlDeviceGetGpuInstanceId");
  api.computeInstanceId = sym<FnDevUIntPtr>("nvmlDeviceGetComputeInstanceId");
  api.utilization = sym<FnDevUtil>("nvmlDeviceGetUtilizationRates");
  api.memory = sym<FnDevMem>("nvmlDeviceGetMemoryInfo");
  api.memoryV2 = sym<FnDevMemV2>("nvmlDeviceGetMemoryInfo_v2");
  api.power = sym<FnDevUIntPtr>("nvmlDeviceGetPowerUsage");
  api.energy = sym<FnDevULLPtr>("nvmlDeviceGetTotalEnergyConsumption");
  api.temperature = sym<FnDevTemp>("nvmlDeviceGetTemperature");
  api.clock = sym<FnDevClock>("nvmlDeviceGetClockInfo");
  api.clockEventReasons =
      sym2<FnDevULLPtr>("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
  api.ecc = sym<FnDevEcc>("nvmlDeviceGetTotalEccErrors");
  api.pcie = sym<FnDevPcie>("nvmlDeviceGetPcieThroughput");
  api.procsV2 = sym2<FnDevProcsV2>("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2");
  api.procsV1 = sym<FnDevProcsV1>("nvmlDeviceGetComputeRunningProcesses");
  api.procUtil = sym<FnDevProcUtil>("nvmlDeviceGetProcessUtilization");
  api.eventSetCreate = sym<FnEventSetCreate>("nvmlEventSetCreate");
  api.eventSetFree = sym<FnEventSetFree>("nvmlEventSetFree");
  api.registerEvents = sym<FnRegisterEvents>("nvmlDeviceRegisterEvents");
  api.supportedEventTypes = sym<FnDevULLPtr>("nvmlDeviceGetSupportedEventTypes");
  api.eventSetWait = sym2<FnEventSetWait>("nvmlEventSetWait_v2", "nvmlEventSetWait");
  return Napi::String::New(env, path);
}

std::string charCall(FnCharBuf f, unsigned int size) {
  std::vector<char> buf(size, 0);
  if (f == nullptr || f(buf.data(), size) != NVML_SUCCESS) return std::string();
  return std::string(buf.data());
}

Napi::Value Init(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (api.lib == nullptr) throw plainError(env, "TG_NVML_NOT_LOADED", "NVML library not loaded: call load() first");
  std::lock_guard<std::mutex> lock(apiMutex);
  if (!initialized) {
    nvmlReturn_t r = api.init();
    if (r != NVML_SUCCESS) throw nvmlError(env, "nvmlInit_v2", r);
    unsigned int count = 0;
    r = api.deviceCount(&count);
    if (r != NVML_SUCCESS) {
      api.shutdown();
      throw nvmlError(env, "nvmlDeviceGetCount_v2", r);
    }
    handles.assign(count, nullptr);
    for (unsigned int i = 0; i < count; i++) {
      r = api.handleByIndex(i, &handles[i]);
      if (r != NVML_SUCCESS && r != NVML_ERROR_GPU_IS_LOST && r != NVML_ERROR_NO_PERMISSION) {
        api.shutdown();
        handles.clear();
        throw nvmlError(env, "nvmlDeviceGetHandleByIndex_v2", r);
      }
    }
    initialized = true;
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("library", Napi::String::New(env, api.path));
  out.Set("driverVersion", Napi::String::New(env, charCall(api.driverVersion, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)));
  out.Set("nvmlVersion", Napi::String::New(env, charCall(api.nvmlVersion, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE)));
  out.Set("deviceCount", Napi::Number::New(env, static_cast<double>(handles.size())));
  return out;
}

Napi::Value Shutdown(const Napi::CallbackInfo &info) {
  std::lock_guard<std::mutex> lock(apiMutex);
  if (initialized) {
    initialized = false;
    handles.clear();
    nvmlReturn_t r = api.shutdown();
    if (r != NVML_SUCCESS) throw nvmlError(info.Env(), "nvmlShutdown", r);
  }
  return info.Env().Undefined();
}

Napi::Value DeviceCount(const Napi::CallbackInfo &info) {
  requireInit(info.Env());
  return Napi::Number::New(info.Env(), static_cast<double>(handles.size()));
}

// ---- device identity ----

std::string devString(FnDevCharBuf f, nvmlDevice_t d, unsigned int size, nvmlReturn_t *r) {
  std::vector<char> buf(size, 0);
  *r = f(d, buf.data(), size);
  return *r == NVML_SUCCESS ? std::string(buf.data()) : std::string();
}

Napi::Array migDevices(FieldContext &fc, nvmlDevice_t d, bool withMemory) {
  Napi::Env env = fc.env;
  Napi::Array arr = Napi::Array::New(env);
  unsigned int max = 0;
  if (!fc.ok("nvmlDeviceGetMaxMigDeviceCount", "mig", api.maxMigDeviceCount(d, &max))) return arr;
  uint32_t n = 0;
  for (unsigned int slot = 0; slot < max; slot++) {
    nvmlDevice_t m = nullptr;
    nvmlReturn_t r = api.migDeviceByIndex(d, slot, &m);
    if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (!fc.ok("nvmlDeviceGetMigDeviceHandleByIndex", "mig", r)) continue;
    Napi::Object o = Napi::Object::New(env);
    o.Set("slot", Napi::Number::New(env, slot));
    if (api.uuid != nullptr) {
      std::string u = devString(api.uuid, m, NVML_DEVICE_UUID_V2_BUFFER_SIZE, &r);
      if (fc.ok("nvmlDeviceGetUUID", "mig", r)) o.Set("uuid", Napi::String::New(env, u));
    }
    unsigned int id = 0;
    if (api.gpuInstanceId != nullptr && fc.ok("nvmlDeviceGetGpuInstanceId", "mig", api.gpuInstanceId(m, &id)))
      o.Set("gpuInstanceId", Napi::Number::New(env, id));
    if (api.computeInstanceId != nullptr &&
        fc.ok("nvmlDeviceGetComputeInstanceId", "mig", api.computeInstanceId(m, &id)))
      o.Set("computeInstanceId", Napi::Number::New(env, id));
    if (withMemory && api.memory != nullptr) {
      nvmlMemory_t mem = {};
      if (fc.ok("nvmlDeviceGetMemoryInfo", "mig", api.memory(m, &mem))) {
        o.Set("memTotalBytes", Napi::Number::New(env, static_cast<double>(mem.total)));
        o.Set("memUsedBytes", Napi::Number::New(env, static_cast<double>(mem.used)));
        o.Set("memFreeBytes", Napi::Number::New(env, static_cast<double>(mem.free)));
      }
    }
    if (withMemory && api.utilization != nullptr) {
      nvmlUtilization_t u = {};
      if (fc.ok("nvmlDeviceGetUtilizationRates", "mig", api.utilization(m, &u))) {
        o.Set("gpuUtilPct", Napi::Number::New(env, u.gpu));
        o.Set("memUtilPct", Napi::Number::New(env, u.memory));
      }
    }
    arr.Set(n++, o);
  }
  return arr;
}

FieldContext newContext(Napi::Env env) {
  FieldContext fc{env, Napi::Object::New(env), Napi::Array::New(env), Napi::Object::New(env)};
  return fc;
}

void finish(FieldContext &fc) {
  fc.out.Set("unsupported", fc.unsupported);
  if (fc.anyFieldError) fc.out.Set("fieldErrors", fc.fieldErrors);
}

void migMode(FieldContext &fc, nvmlDevice_t d, bool withMemory) {
  if (api.migMode == nullptr || api.maxMigDeviceCount == nullptr || api.migDeviceByIndex == nullptr) {
    fc.missing("mig");
    return;
  }
  unsigned int current = 0, pending = 0;
  if (!fc.ok("nvmlDeviceGetMigMode", "mig", api.migMode(d, &current, &pending))) return;
  fc.out.Set("migEnabled", Napi::Boolean::New(fc.env, current == NVML_DEVICE_MIG_ENABLE));
  fc.out.Set("migPendingEnabled", Napi::Boolean::New(fc.env, pending == NVML_DEVICE_MIG_ENABLE));
  if (current == NVML_DEVICE_MIG_ENABLE) fc.out.Set("migDevices", migDevices(fc, d, withMemory));
}

Napi::Value DeviceInfo(const Napi::CallbackInfo &info) {
  nvmlDevice_t d = device(info);
  FieldContext fc = newContext(info.Env());
  fc.num("index", info[0].As<Napi::Number>().DoubleValue());
  nvmlReturn_t r;
  if (api.uuid == nullptr) fc.missing("uuid");
  else {
    std::string u = devString(api.uuid, d, NVML_DEVICE_UUID_V2_BUFFER_SIZE, &r);
    if (fc.ok("nvmlDeviceGetUUID", "uuid", r)) fc.out.Set("uuid", Napi::String::New(fc.env, u));
  }
  if (api.name == nullptr) fc.missing("name");
  else {
    std::string n = devString(api.name, d, NVML_DEVICE_NAME_V2_BUFFER_SIZE, &r);
    if (fc.ok("nvmlDeviceGetName", "name", r)) fc.out.Set("name", Napi::String::New(fc.env, n));
  }
  if (api.pciInfo == nullptr) fc.missing("pciBusId");
  else {
    nvmlPciInfo_t p = {};
    if (fc.ok("nvmlDeviceGetPciInfo_v3", "pciBusId", api.pciInfo(d, &p))) {
      p.busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE - 1] = 0;
      fc.out.Set("pciBusId", Napi::String::New(fc.env, p.busId));
    }
  }
  migMode(fc, d, false);
  finish(fc);
  return fc.out;
}

// ---- one sample of every counter ----

Napi::Value Sample(const Napi::CallbackInfo &info) {
  nvmlDevice_t d = device(info);
  FieldContext fc = newContext(info.Env());
  if (api.utilization == nullptr) fc.missing("utilization");
  else {
    nvmlUtilization_t u = {};
    if (fc.ok("nvmlDeviceGetUtilizationRates", "utilization", api.utilization(d, &u))) {
      fc.num("gpuUtilPct", u.gpu);
      fc.num("memUtilPct", u.memory);
    }
  }
  if (api.memoryV2 != nullptr) {
    nvmlMemory_v2_t m = {};
    m.version = TG_NVML_MEMORY_V2;
    nvmlReturn_t r = api.memoryV2(d, &m);
    if (r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || r == NVML_ERROR_FUNCTION_NOT_FOUND) {
      api.memoryV2 = nullptr; // this driver's v2 differs: use v1 from now on
    } else if (fc.ok("nvmlDeviceGetMemoryInfo_v2", "memory", r)) {
      fc.num("memTotalBytes", static_cast<double>(m.total));
      fc.num("memReservedBytes", static_cast<double>(m.reserved));
      fc.num("memUsedBytes", static_cast<double>(m.used));
      fc.num("memFreeBytes", static_cast<double>(m.free));
    }
  }
  if (api.memoryV2 == nullptr) {
    if (api.memory == nullptr) fc.missing("memory");
    else {
      nvmlMemory_t m = {};
      if (fc.ok("nvmlDeviceGetMemoryInfo", "memory", api.memory(d, &m))) {
        fc.num("memTotalBytes", static_cast<double>(m.total));
        fc.num("memUsedBytes", static_cast<double>(m.used));
        fc.num("memFreeBytes", static_cast<double>(m.free));
      }
    }
  }
  unsigned int v = 0;
  unsigned long long ull = 0;
  if (api.power == nullptr) fc.missing("power");
  else if (fc.ok("nvmlDeviceGetPowerUsage", "power", api.power(d, &v))) fc.num("powerMw", v);
  if (api.energy == nullptr) fc.missing("energy");
  else if (fc.ok("nvmlDeviceGetTotalEnergyConsumption", "energy", api.energy(d, &ull)))
    fc.num("energyMj", static_cast<double>(ull));
  if (api.temperature == nullptr) fc.missing("temperature");
  else if (fc.ok("nvmlDeviceGetTemperature", "temperature", api.temperature(d, NVML_TEMPERATURE_GPU, &v)))
    fc.num("temperatureC", v);
  if (api.clock == nullptr) fc.missing("clocks");
  else {
    if (fc.ok("nvmlDeviceGetClockInfo", "smClock", api.clock(d, NVML_CLOCK_SM, &v))) fc.num("smClockMhz", v);
    if (fc.ok("nvmlDeviceGetClockInfo", "memClock", api.clock(d, NVML_CLOCK_MEM, &v))) fc.num("memClockMhz", v);
  }
  if (api.clockEventReasons == nullptr) fc.missing("clockEventReasons");
  else if (fc.ok("nvmlDeviceGetCurrentClocksEventReasons", "clockEventReasons", api.clockEventReasons(d, &ull)))
    fc.num("clockEventReasons", static_cast<double>(ull));
  if (api.ecc == nullptr) fc.missing("ecc");
  else {
    if (fc.ok("nvmlDeviceGetTotalEccErrors", "ecc",
              api.ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ull)))
      fc.num("eccCorrectedVolatile", static_cast<double>(ull));
    if (fc.ok("nvmlDeviceGetTotalEccErrors", "ecc",
              api.ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull)))
      fc.num("eccUncorrectedVolatile", static_cast<double>(ull));
  }
  if (api.pcie == nullptr) fc.missing("pcie");
  else {
    if (fc.ok("nvmlDeviceGetPcieThroughput", "pcie", api.pcie(d, NVML_PCIE_UTIL_TX_BYTES, &v))) fc.num("pcieTxKBps", v);
    if (fc.ok("nvmlDeviceGetPcieThroughput", "pcie", api.pcie(d, NVML_PCIE_UTIL_RX_BYTES, &v))) fc.num("pcieRxKBps", v);
  }
  migMode(fc, d, true);
  finish(fc);
  return fc.out;
}

// ---- processes ----

Napi::Value Processes(const Napi::CallbackInfo &info) {
  nvmlDevice_t d = device(info);
  Napi::Env env = info.Env();
  Napi::Array arr = Napi::Array::New(env);
  if (api.procsV2 == nullptr && api.procsV1 == nullptr)
    throw plainError(env, "TG_NVML_UNSUPPORTED", "nvmlDeviceGetComputeRunningProcesses is missing");
  for (int attempt = 0; attempt < 4; attempt++) {
    unsigned int count = 0;
    nvmlReturn_t r = api.procsV2 != nullptr ? api.procsV2(d, &count, nullptr) : api.procsV1(d, &count, nullptr);
    if (r == NVML_SUCCESS) return arr;
    if (r != NVML_ERROR_INSUFFICIENT_SIZE) throw nvmlError(env, "nvmlDeviceGetComputeRunningProcesses", r);
    count += 8;
    if (api.procsV2 != nullptr) {
      std::vector<nvmlProcessInfo_v2_t> infos(count);
      r = api.procsV2(d, &count, infos.data());
      if (r == NVML_ERROR_INSUFFICIENT_SIZE) continue;
      if (r != NVML_SUCCESS) throw nvmlError(env, "nvmlDeviceGetComputeRunningProcesses_v3", r);
      for (unsigned int i = 0; i < count; i++) {
        Napi::Object o = Napi::Object::New(env);
        o.Set("pid", Napi::Number::New(env, infos[i].pid));
        // NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot tell (e.g. no permission on Windows WDDM)
        if (infos[i].usedGpuMemory != ~0ULL)
          o.Set("usedMemoryBytes", Napi::Number::New(env, static_cast<double>(infos[i].usedGpuMemory)));
        if (infos[i].gpuInstanceId != 0xFFFFFFFFu)
          o.Set("gpuInstanceId", Napi::Number::New(env, infos[i].gpuInstanceId));
        if (infos[i].computeInstanceId != 0xFFFFFFFFu)
          o.Set("computeInstanceId", Napi::Number::New(env, infos[i].computeInstanceId));
        arr.Set(i, o);
      }
    } else {
      std::vector<nvmlProcessInfo_v1_t> infos(count);
      r = api.procsV1(d, &count, infos.data());
      if (r == NVML_ERROR_INSUFFICIENT_SIZE) continue;
      if (r != NVML_SUCCESS) throw nvmlError(env, "nvmlDeviceGetComputeRunningProcesses", r);
      for (unsigned int i = 0; i < count; i++) {
        Napi::Object o = Napi::Object::New(env);
        o.Set("pid", Napi::Number::New(env, infos[i].pid));
        if (infos[i].usedGpuMemory != ~0ULL)
          o.Set("usedMemoryBytes", Napi::Number::New(env, static_cast<double>(infos[i].usedGpuMemory)));
        arr.Set(i, o);
      }
    }
    return arr;
  }
  return arr;
}

Napi::Value ProcessUtilization(const Napi::CallbackInfo &info) {
  nvmlDevice_t d = device(info);
  Napi::Env env = info.Env();
  if (api.procUtil == nullptr) throw plainError(env, "TG_NVML_UNSUPPORTED", "nvmlDeviceGetProcessUtilization is missing");
  unsigned long long since = info.Length() > 1 && info[1].IsNumber()
                                 ? static_cast<unsigned long long>(info[1].As<Napi::Number>().DoubleValue())
                                 : 0ULL;
  Napi::Array arr = Napi::Array::New(env);
  unsigned int count = 0;
  nvmlReturn_t r = api.procUtil(d, nullptr, &count, since);
  if (r == NVML_ERROR_NOT_FOUND || (r == NVML_SUCCESS && count == 0)) return arr;
  if (r != NVML_ERROR_INSUFFICIENT_SIZE && r != NVML_SUCCESS) throw nvmlError(env, "nvmlDeviceGetProcessUtilization", r);
  count += 8;
  std::vector<nvmlProcessUtilizationSample_t> s(count);
  r = api.procUtil(d, s.data(), &count, since);
  if (r == NVML_ERROR_NOT_FOUND) return arr;
  if (r != NVML_SUCCESS) throw nvmlError(env, "nvmlDeviceGetProcessUtilization", r);
  for (unsigned int i = 0; i < count; i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("pid", Napi::Number::New(env, s[i].pid));
    o.Set("timestampUs", Napi::Number::New(env, static_cast<double>(s[i].timeStamp)));
    o.Set("smPct", Napi::Number::New(env, s[i].smUtil));
    o.Set("memPct", Napi::Number::New(env, s[i].memUtil));
    o.Set("encPct", Napi::Number::New(env, s[i].encUtil));
    o.Set("decPct", Napi::Number::New(env, s[i].decUtil));
    arr.Set(i, o);
  }
  return arr;
}

// ---- events, waited on by a native thread ----

struct PendingEvent {
  bool isError;
  int index;
  unsigned long long type;
  unsigned long long data;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  nvmlReturn_t code;
};

struct EventWatcher {
  std::thread thread;
  std::atomic<bool> stopping{false};
  nvmlEventSet_t set = nullptr;
  Napi::ThreadSafeFunction tsfn;
  Napi::Promise::Deferred *stopped = nullptr; // resolved by the finalizer once the thread is gone
  std::vector<nvmlDevice_t> devices;
  unsigned int timeoutMs = 250;
};

EventWatcher *watcher = nullptr;

void deliver(Napi::Env env, Napi::Function cb, PendingEvent *ev) {
  if (env != nullptr && cb != nullptr) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("index", Napi::Number::New(env, ev->index));
    if (ev->isError) {
      o.Set("error", Napi::String::New(env, codeName(ev->code)));
      o.Set("message", Napi::String::New(env, "nvmlEventSetWait_v2: " + errorText(ev->code)));
    } else {
      o.Set("type", Napi::Number::New(env, static_cast<double>(ev->type)));
      o.Set("data", Napi::Number::New(env, static_cast<double>(ev->data)));
      if (ev->gpuInstanceId != 0xFFFFFFFFu) o.Set("gpuInstanceId", Napi::Number::New(env, ev->gpuInstanceId));
      if (ev->computeInstanceId != 0xFFFFFFFFu)
        o.Set("computeInstanceId", Napi::Number::New(env, ev->computeInstanceId));
    }
    cb.Call({o});
  }
  delete ev;
}

void watchLoop(EventWatcher *w) {
  nvmlReturn_t lastError = NVML_SUCCESS;
  while (!w->stopping.load()) {
    nvmlEventData_t data = {};
    nvmlReturn_t r = api.eventSetWait(w->set, &data, w->timeoutMs);
    if (w->stopping.load()) break;
    if (r == NVML_ERROR_TIMEOUT) continue;
    if (r == NVML_SUCCESS) {
      lastError = NVML_SUCCESS;
      int index = -1;
      for (size_t i = 0; i < w->devices.size(); i++)
        if (w->devices[i] == data.device) index = static_cast<int>(i);
      auto *ev = new PendingEvent{false, index, data.eventType, data.eventData, data.gpuInstanceId,
                                  data.computeInstanceId, NVML_SUCCESS};
      if (w->tsfn.NonBlockingCall(ev, deliver) != napi_ok) delete ev;
      continue;
    }
    // An error (e.g. GPU lost): report it once per run of identical errors, then back off instead of spinning.
    if (r != lastError) {
      auto *ev = new PendingEvent{true, -1, 0, 0, 0xFFFFFFFFu, 0xFFFFFFFFu, r};
      if (w->tsfn.NonBlockingCall(ev, deliver) != napi_ok) delete ev;
      lastError = r;
    }
    for (unsigned int slept = 0; slept < w->timeoutMs && !w->stopping.load(); slept += 10)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  w->tsfn.Release();
}

Napi::Value StartEvents(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  requireInit(env);
  if (watcher != nullptr) throw plainError(env, "TG_NVML_EVENTS_RUNNING", "events are already being watched");
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsFunction())
    throw Napi::TypeError::New(env, "startEvents(mask, onEvent, timeoutMs?) expected");
  if (api.eventSetCreate == nullptr || api.registerEvents == nullptr || api.eventSetWait == nullptr ||
      api.eventSetFree == nullptr)
    throw plainError(env, "TG_NVML_UNSUPPORTED", "NVML event functions are missing");
  unsigned long long mask = static_cast<unsigned long long>(info[0].As<Napi::Number>().DoubleValue());
  unsigned int timeoutMs = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().Uint32Value() : 250;
  nvmlEventSet_t set = nullptr;
  nvmlReturn_t r = api.eventSetCreate(&set);
  if (r != NVML_SUCCESS) throw nvmlError(env, "nvmlEventSetCreate", r);
  // Per device: the events it supports, within the mask. Devices that support none are skipped.
  Napi::Array registered = Napi::Array::New(env);
  uint32_t n = 0;
  for (size_t i = 0; i < handles.size(); i++) {
    unsigned long long supported = mask;
    if (api.supportedEventTypes != nullptr && api.supportedEventTypes(handles[i], &supported) != NVML_SUCCESS)
      continue;
    unsigned long long want = supported & mask;
    if (want == 0) continue;
    r = api.registerEvents(handles[i], want, set);
    if (r == NVML_SUCCESS) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("index", Napi::Number::New(env, static_cast<double>(i)));
      o.Set("mask", Napi::Number::New(env, static_cast<double>(want)));
      registered.Set(n++, o);
    }
  }
  auto *w = new EventWatcher();
  w->set = set;
  w->devices = handles;
  w->timeoutMs = timeoutMs == 0 ? 1 : timeoutMs;
  w->tsfn = Napi::ThreadSafeFunction::New(env, info[1].As<Napi::Function>(), "tailguard-nvml-events", 0, 1,
                                          [w](Napi::Env fenv) {
                                            if (w->thread.joinable()) w->thread.join();
                                            api.eventSetFree(w->set);
                                            if (w->stopped != nullptr) {
                                              w->stopped->Resolve(fenv.Undefined());
                                              delete w->stopped;
                                            }
                                            if (watcher == w) watcher = nullptr;
                                            delete w;
                                          });
  w->tsfn.Unref(env); // watching events never keeps the process alive on its own
  watcher = w;
  w->thread = std::thread(watchLoop, w);
  return registered;
}

Napi::Value StopEvents(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  auto deferred = Napi::Promise::Deferred::New(env);
  if (watcher == nullptr || watcher->stopped != nullptr) {
    deferred.Resolve(env.Undefined());
    return deferred.Promise();
  }
  watcher->stopped = new Napi::Promise::Deferred(deferred);
  watcher->tsfn.Ref(env); // keep the loop alive until the thread has gone and the promise settles
  watcher->stopping.store(true);
  return deferred.Promise();
}

Napi::Value ErrorString(const Napi::CallbackInfo &info) {
  nvmlReturn_t r = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("code", Napi::String::New(info.Env(), codeName(r)));
  o.Set("message", Napi::String::New(info.Env(), errorText(r)));
  return o;
}

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  exports.Set("load", Napi::Function::New(env, Load));
  exports.Set("init", Napi::Function::New(env, Init));
  exports.Set("shutdown", Napi::Function::New(env, Shutdown));
  exports.Set("deviceCount", Napi::Function::New(env, DeviceCount));
  exports.Set("deviceInfo", Napi::Function::New(env, DeviceInfo));
  exports.Set("sample", Napi::Function::New(env, Sample));
  exports.Set("processes", Napi::Function::New(env, Processes));
  exports.Set("processUtilization", Napi::Function::New(env, ProcessUtilization));
  exports.Set("startEvents", Napi::Function::New(env, StartEvents));
  exports.Set("stopEvents", Napi::Function::New(env, StopEvents));
  exports.Set("errorString", Napi::Function::New(env, ErrorString));
  return exports;
}

} // namespace

NODE_API_MODULE(tailguard_nvml, InitModule)
