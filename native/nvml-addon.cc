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
#include <cmath>
#include <map>
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
typedef nvmlReturn_t (*FnDevFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t *);
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
  FnDevFieldValues fieldValues = nullptr;
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
std::vector<nvmlReturn_t> handleCodes; // why a handle is missing (GPU lost or no permission at init)

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

// A failure raised by the napi-free core below, turned into a JS error on the main thread: either an NVML return
// code from function `fn`, or one of the addon's own codes (`tgCode`) with a message.
struct Failure {
  std::string fn;
  nvmlReturn_t code = NVML_SUCCESS;
  std::string tgCode;
  std::string message;
};

Failure nvmlFailure(const char *fn, nvmlReturn_t r) { return Failure{fn, r, std::string(), std::string()}; }
Failure tgFailure(const char *code, const std::string &message) {
  return Failure{std::string(), NVML_SUCCESS, code, message};
}

Napi::Error toJsError(Napi::Env env, const Failure &f) {
  if (!f.tgCode.empty()) return plainError(env, f.tgCode.c_str(), f.message);
  return nvmlError(env, f.fn.c_str(), f.code);
}

// A JS object under construction, built off the main thread and converted there: numbers, booleans and strings in
// insertion order, plus the `unsupported` list, `fieldErrors` and MIG devices.
struct Record {
  struct Field {
    std::string key;
    int kind; // 0 number, 1 boolean, 2 string
    double num;
    std::string str;
  };
  std::vector<Field> fields;
  std::vector<std::string> unsupported;
  std::vector<std::pair<std::string, std::string>> fieldErrors;
  std::vector<Record> migDevices;
  bool hasMigDevices = false;
  bool withUnsupported = false;

  void num(const char *k, double v) { fields.push_back(Field{k, 0, v, std::string()}); }
  void boolean(const char *k, bool v) { fields.push_back(Field{k, 1, v ? 1.0 : 0.0, std::string()}); }
  void str(const char *k, const std::string &v) { fields.push_back(Field{k, 2, 0, v}); }

  Napi::Object toJs(Napi::Env env) const {
    Napi::Object o = Napi::Object::New(env);
    for (const Field &f : fields) {
      if (f.kind == 0) o.Set(f.key, Napi::Number::New(env, f.num));
      else if (f.kind == 1) o.Set(f.key, Napi::Boolean::New(env, f.num != 0));
      else o.Set(f.key, Napi::String::New(env, f.str));
    }
    if (hasMigDevices) {
      Napi::Array arr = Napi::Array::New(env, migDevices.size());
      for (size_t i = 0; i < migDevices.size(); i++) arr.Set(static_cast<uint32_t>(i), migDevices[i].toJs(env));
      o.Set("migDevices", arr);
    }
    if (withUnsupported) {
      Napi::Array arr = Napi::Array::New(env, unsupported.size());
      for (size_t i = 0; i < unsupported.size(); i++) arr.Set(static_cast<uint32_t>(i), unsupported[i]);
      o.Set("unsupported", arr);
    }
    if (!fieldErrors.empty()) {
      Napi::Object fe = Napi::Object::New(env);
      for (const auto &e : fieldErrors) fe.Set(e.first, e.second);
      o.Set("fieldErrors", fe);
    }
    return o;
  }
};

Napi::Array toJsArray(Napi::Env env, const std::vector<Record> &records) {
  Napi::Array arr = Napi::Array::New(env, records.size());
  for (size_t i = 0; i < records.size(); i++) arr.Set(static_cast<uint32_t>(i), records[i].toJs(env));
  return arr;
}

// A per-field call's outcome: success sets the field, NOT_SUPPORTED leaves it out, GPU_IS_LOST throws a Failure
// (the whole device is gone), anything else goes into `fieldErrors` so the other fields still arrive.
struct FieldContext {
  Record &out;
  void missing(const char *field) { out.unsupported.push_back(field); }
  bool ok(const char *fn, const char *field, nvmlReturn_t r) {
    if (r == NVML_SUCCESS) return true;
    if (r == NVML_ERROR_NOT_SUPPORTED) return false;
    if (r == NVML_ERROR_GPU_IS_LOST) throw nvmlFailure(fn, r);
    out.fieldErrors.emplace_back(field, std::string(codeName(r)) + ": " + errorText(r));
    return false;
  }
};

std::atomic<bool> memoryV2Broken{false};

// Counters read through nvmlDeviceGetFieldValues, in one call per GPU and pass:
// - PCIe throughput from the byte counters NVML_FI_DEV_PCIE_COUNT_{TX,RX}_BYTES, as the rate between two passes,
//   with no wait. nvmlDeviceGetPcieThroughput instead counts for 20 ms per call, so TX and RX held each pass 40 ms
//   per GPU (a pass took 50 ms on an H100 and an H200 with driver 580; 5-7 ms with the counters);
// - energy from NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION in the same call (one call fewer; the energy reading itself
//   costs the driver ~3.5 ms of CPU either way).
// A field the driver does not answer is read the older way from then on.
struct FieldState {
  unsigned long long tx = 0, rx = 0;
  long long tUs = 0;
  bool epochClock = false;
  bool pcieUnsupported = false;
  bool energyUnsupported = false;
};
std::mutex fieldMutex;
std::map<nvmlDevice_t, FieldState> fieldState; // per physical GPU read so far; cleared by nvmlInit

bool fieldAsUll(const nvmlFieldValue_t &f, unsigned long long &out) {
  switch (f.valueType) {
  case NVML_VALUE_TYPE_UNSIGNED_INT: out = f.value.uiVal; return true;
  case NVML_VALUE_TYPE_UNSIGNED_LONG: out = f.value.ulVal; return true;
  case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: out = f.value.ullVal; return true;
  case NVML_VALUE_TYPE_SIGNED_LONG_LONG: out = static_cast<unsigned long long>(f.value.sllVal); return f.value.sllVal >= 0;
  case NVML_VALUE_TYPE_SIGNED_INT: out = static_cast<unsigned long long>(f.value.siVal); return f.value.siVal >= 0;
  default: return false;
  }
}

long long steadyUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A driver without a field (older than it, or a vGPU) answers one of these for it.
bool fieldAbsent(nvmlReturn_t r) {
  return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT || r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

struct CounterFields {
  bool pcie = false;   // answered: the rates are written from the second reading on (KB/s of 1,024 bytes)
  bool energy = false; // answered: energyMj written
};

CounterFields readCounterFields(FieldContext &fc, nvmlDevice_t d) {
  CounterFields done;
  if (api.fieldValues == nullptr) return done;
  bool wantPcie, wantEnergy;
  {
    std::lock_guard<std::mutex> lock(fieldMutex);
    FieldState &st = fieldState[d];
    wantPcie = !st.pcieUnsupported;
    wantEnergy = !st.energyUnsupported;
  }
  if (!wantPcie && !wantEnergy) return done;
  nvmlFieldValue_t f[3] = {};
  int n = 0;
  int iTx = -1, iRx = -1, iEnergy = -1;
  if (wantPcie) {
    iTx = n++;
    f[iTx].fieldId = NVML_FI_DEV_PCIE_COUNT_TX_BYTES;
    iRx = n++;
    f[iRx].fieldId = NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
  }
  if (wantEnergy) {
    iEnergy = n++;
    f[iEnergy].fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION;
  }
  nvmlReturn_t r = api.fieldValues(d, n, f);
  if (r == NVML_ERROR_GPU_IS_LOST) throw nvmlFailure("nvmlDeviceGetFieldValues", r);
  for (int i = 0; i < n; i++)
    if (r == NVML_SUCCESS && f[i].nvmlReturn == NVML_ERROR_GPU_IS_LOST)
      throw nvmlFailure("nvmlDeviceGetFieldValues", NVML_ERROR_GPU_IS_LOST);
  // the call as a whole failed: a driver without it falls back for good, another error is this pass's
  if (r != NVML_SUCCESS) {
    if (fieldAbsent(r)) {
      std::lock_guard<std::mutex> lock(fieldMutex);
      fieldState[d].pcieUnsupported = fieldState[d].energyUnsupported = true;
      return done;
    }
    fc.ok("nvmlDeviceGetFieldValues", "fields", r);
    done.pcie = wantPcie;
    done.energy = wantEnergy;
    return done;
  }
  // the reading's own time where the driver gives one (a cached value keeps its time), else this thread's clock
  long long now = steadyUs();
  std::lock_guard<std::mutex> lock(fieldMutex);
  FieldState &st = fieldState[d];
  if (wantEnergy) {
    unsigned long long mj = 0;
    nvmlReturn_t er = f[iEnergy].nvmlReturn;
    if (fieldAbsent(er) || (er == NVML_SUCCESS && !fieldAsUll(f[iEnergy], mj))) st.energyUnsupported = true;
    else {
      done.energy = true;
      if (fc.ok("nvmlDeviceGetFieldValues", "energy", er)) fc.out.num("energyMj", static_cast<double>(mj));
    }
  }
  if (wantPcie) {
    unsigned long long tx = 0, rx = 0;
    nvmlReturn_t pr = f[iTx].nvmlReturn != NVML_SUCCESS ? f[iTx].nvmlReturn : f[iRx].nvmlReturn;
    if (fieldAbsent(pr) || (pr == NVML_SUCCESS && !(fieldAsUll(f[iTx], tx) && fieldAsUll(f[iRx], rx))))
      st.pcieUnsupported = true;
    else {
      done.pcie = true;
      if (fc.ok("nvmlDeviceGetFieldValues", "pcie", pr)) {
        bool epoch = f[iTx].timestamp > 0;
        long long t = epoch ? f[iTx].timestamp : now;
        if (st.tUs > 0 && st.epochClock == epoch && t > st.tUs && tx >= st.tx && rx >= st.rx) {
          double seconds = static_cast<double>(t - st.tUs) / 1e6;
          fc.out.num("pcieTxKBps", std::round(static_cast<double>(tx - st.tx) / 1024.0 / seconds));
          fc.out.num("pcieRxKBps", std::round(static_cast<double>(rx - st.rx) / 1024.0 / seconds));
        }
        // a counter that went back (reset, wrap) or a clock that did not move gives no rate this pass
        st.tx = tx;
        st.rx = rx;
        st.tUs = t;
        st.epochClock = epoch;
      }
    }
  }
  return done;
}

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
  api.fieldValues = sym<FnDevFieldValues>("nvmlDeviceGetFieldValues");
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

// nvmlInit_v2 and the device handles; may take a long time on a real driver (no persistence mode), so the JS side
// calls it through InitAsync on the libuv thread pool.
Record doInit() {
  if (api.lib == nullptr) throw tgFailure("TG_NVML_NOT_LOADED", "NVML library not loaded: call load() first");
  std::lock_guard<std::mutex> lock(apiMutex);
  if (!initialized) {
    nvmlReturn_t r = api.init();
    if (r != NVML_SUCCESS) throw nvmlFailure("nvmlInit_v2", r);
    unsigned int count = 0;
    r = api.deviceCount(&count);
    if (r != NVML_SUCCESS) {
      api.shutdown();
      throw nvmlFailure("nvmlDeviceGetCount_v2", r);
    }
    std::vector<nvmlDevice_t> found(count, nullptr);
    std::vector<nvmlReturn_t> codes(count, NVML_SUCCESS);
    for (unsigned int i = 0; i < count; i++) {
      r = api.handleByIndex(i, &found[i]);
      codes[i] = r;
      if (r != NVML_SUCCESS) found[i] = nullptr;
      if (r != NVML_SUCCESS && r != NVML_ERROR_GPU_IS_LOST && r != NVML_ERROR_NO_PERMISSION) {
        api.shutdown();
        throw nvmlFailure("nvmlDeviceGetHandleByIndex_v2", r);
      }
    }
    handles = found;
    {
      std::lock_guard<std::mutex> fieldLock(fieldMutex);
      fieldState.clear();
    }
    handleCodes = codes;
    initialized = true;
  }
  Record out;
  out.str("library", api.path);
  out.str("driverVersion", charCall(api.driverVersion, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE));
  out.str("nvmlVersion", charCall(api.nvmlVersion, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE));
  out.num("deviceCount", static_cast<double>(handles.size()));
  return out;
}

struct EventWatcher;
extern EventWatcher *watcher;

Napi::Value Init(const Napi::CallbackInfo &info) {
  try {
    return doInit().toJs(info.Env());
  } catch (const Failure &f) {
    throw toJsError(info.Env(), f);
  }
}

class InitWorker : public Napi::AsyncWorker {
 public:
  explicit InitWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      result_ = doInit();
    } catch (const Failure &f) {
      failure_ = f;
      failed_ = true;
    }
  }
  void OnOK() override {
    if (failed_) deferred_.Reject(toJsError(Env(), failure_).Value());
    else deferred_.Resolve(result_.toJs(Env()));
  }

 private:
  Napi::Promise::Deferred deferred_;
  Record result_;
  Failure failure_;
  bool failed_ = false;
};

Napi::Value InitAsync(const Napi::CallbackInfo &info) {
  auto *w = new InitWorker(info.Env());
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

Napi::Value Shutdown(const Napi::CallbackInfo &info) {
  if (watcher != nullptr)
    throw plainError(info.Env(), "TG_NVML_EVENTS_RUNNING", "stop events (await stopEvents()) before shutdown()");
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
  if (!initialized)
    throw plainError(info.Env(), "TG_NVML_NOT_INITIALIZED", "NVML is not initialized: call init() first");
  return Napi::Number::New(info.Env(), static_cast<double>(handles.size()));
}

nvmlDevice_t handleAt(int64_t i) {
  if (!initialized) throw tgFailure("TG_NVML_NOT_INITIALIZED", "NVML is not initialized: call init() first");
  if (i < 0 || static_cast<size_t>(i) >= handles.size())
    throw tgFailure("TG_NVML_BAD_INDEX", "no GPU at index " + std::to_string(i));
  nvmlDevice_t d = handles[static_cast<size_t>(i)];
  if (d == nullptr) throw nvmlFailure("nvmlDeviceGetHandleByIndex_v2", handleCodes[static_cast<size_t>(i)]);
  return d;
}

int64_t indexArg(const Napi::CallbackInfo &info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(info.Env(), "device index expected");
  return info[0].As<Napi::Number>().Int64Value();
}

// ---- device identity and counters (no napi: these run on the main thread or the thread pool) ----

std::string devString(FnDevCharBuf f, nvmlDevice_t d, unsigned int size, nvmlReturn_t *r) {
  std::vector<char> buf(size, 0);
  *r = f(d, buf.data(), size);
  return *r == NVML_SUCCESS ? std::string(buf.data()) : std::string();
}

void collectMigDevices(FieldContext &fc, nvmlDevice_t d, bool withCounters) {
  fc.out.hasMigDevices = true;
  unsigned int max = 0;
  if (!fc.ok("nvmlDeviceGetMaxMigDeviceCount", "mig", api.maxMigDeviceCount(d, &max))) return;
  for (unsigned int slot = 0; slot < max; slot++) {
    nvmlDevice_t m = nullptr;
    nvmlReturn_t r = api.migDeviceByIndex(d, slot, &m);
    if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (!fc.ok("nvmlDeviceGetMigDeviceHandleByIndex", "mig", r)) continue;
    Record o;
    o.num("slot", slot);
    if (api.uuid != nullptr) {
      std::string u = devString(api.uuid, m, NVML_DEVICE_UUID_V2_BUFFER_SIZE, &r);
      if (fc.ok("nvmlDeviceGetUUID", "mig", r)) o.str("uuid", u);
    }
    unsigned int id = 0;
    if (api.gpuInstanceId != nullptr && fc.ok("nvmlDeviceGetGpuInstanceId", "mig", api.gpuInstanceId(m, &id)))
      o.num("gpuInstanceId", id);
    if (api.computeInstanceId != nullptr &&
        fc.ok("nvmlDeviceGetComputeInstanceId", "mig", api.computeInstanceId(m, &id)))
      o.num("computeInstanceId", id);
    if (withCounters && api.memory != nullptr) {
      nvmlMemory_t mem = {};
      if (fc.ok("nvmlDeviceGetMemoryInfo", "mig", api.memory(m, &mem))) {
        o.num("memTotalBytes", static_cast<double>(mem.total));
        o.num("memUsedBytes", static_cast<double>(mem.used));
        o.num("memFreeBytes", static_cast<double>(mem.free));
      }
    }
    if (withCounters && api.utilization != nullptr) {
      nvmlUtilization_t u = {};
      if (fc.ok("nvmlDeviceGetUtilizationRates", "mig", api.utilization(m, &u))) {
        o.num("gpuUtilPct", u.gpu);
        o.num("memUtilPct", u.memory);
      }
    }
    fc.out.migDevices.push_back(o);
  }
}

void collectMigMode(FieldContext &fc, nvmlDevice_t d, bool withCounters) {
  if (api.migMode == nullptr || api.maxMigDeviceCount == nullptr || api.migDeviceByIndex == nullptr) {
    fc.missing("mig");
    return;
  }
  unsigned int current = 0, pending = 0;
  if (!fc.ok("nvmlDeviceGetMigMode", "mig", api.migMode(d, &current, &pending))) return;
  fc.out.boolean("migEnabled", current == NVML_DEVICE_MIG_ENABLE);
  fc.out.boolean("migPendingEnabled", pending == NVML_DEVICE_MIG_ENABLE);
  if (current == NVML_DEVICE_MIG_ENABLE) collectMigDevices(fc, d, withCounters);
}

Record collectDeviceInfo(int64_t index, nvmlDevice_t d) {
  Record out;
  out.withUnsupported = true;
  FieldContext fc{out};
  out.num("index", static_cast<double>(index));
  nvmlReturn_t r;
  if (api.uuid == nullptr) fc.missing("uuid");
  else {
    std::string u = devString(api.uuid, d, NVML_DEVICE_UUID_V2_BUFFER_SIZE, &r);
    if (fc.ok("nvmlDeviceGetUUID", "uuid", r)) out.str("uuid", u);
  }
  if (api.name == nullptr) fc.missing("name");
  else {
    std::string n = devString(api.name, d, NVML_DEVICE_NAME_V2_BUFFER_SIZE, &r);
    if (fc.ok("nvmlDeviceGetName", "name", r)) out.str("name", n);
  }
  if (api.pciInfo == nullptr) fc.missing("pciBusId");
  else {
    nvmlPciInfo_t p = {};
    if (fc.ok("nvmlDeviceGetPciInfo_v3", "pciBusId", api.pciInfo(d, &p))) {
      p.busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE - 1] = 0;
      out.str("pciBusId", p.busId);
    }
  }
  collectMigMode(fc, d, false);
  return out;
}

Record collectSample(nvmlDevice_t d) {
  Record out;
  out.withUnsupported = true;
  FieldContext fc{out};
  if (api.utilization == nullptr) fc.missing("utilization");
  else {
    nvmlUtilization_t u = {};
    if (fc.ok("nvmlDeviceGetUtilizationRates", "utilization", api.utilization(d, &u))) {
      out.num("gpuUtilPct", u.gpu);
      out.num("memUtilPct", u.memory);
    }
  }
  bool memDone = false;
  if (api.memoryV2 != nullptr && !memoryV2Broken.load()) {
    nvmlMemory_v2_t m = {};
    m.version = TG_NVML_MEMORY_V2;
    nvmlReturn_t r = api.memoryV2(d, &m);
    if (r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || r == NVML_ERROR_FUNCTION_NOT_FOUND) {
      memoryV2Broken.store(true); // this driver's v2 differs: use v1 from now on
    } else {
      memDone = true;
      if (fc.ok("nvmlDeviceGetMemoryInfo_v2", "memory", r)) {
        out.num("memTotalBytes", static_cast<double>(m.total));
        out.num("memReservedBytes", static_cast<double>(m.reserved));
        out.num("memUsedBytes", static_cast<double>(m.used));
        out.num("memFreeBytes", static_cast<double>(m.free));
      }
    }
  }
  if (!memDone) {
    if (api.memory == nullptr) fc.missing("memory");
    else {
      nvmlMemory_t m = {};
      if (fc.ok("nvmlDeviceGetMemoryInfo", "memory", api.memory(d, &m))) {
        out.num("memTotalBytes", static_cast<double>(m.total));
        out.num("memUsedBytes", static_cast<double>(m.used));
        out.num("memFreeBytes", static_cast<double>(m.free));
      }
    }
  }
  unsigned int v = 0;
  unsigned long long ull = 0;
  if (api.power == nullptr) fc.missing("power");
  else if (fc.ok("nvmlDeviceGetPowerUsage", "power", api.power(d, &v))) out.num("powerMw", v);
  CounterFields counters = readCounterFields(fc, d);
  if (!counters.energy) {
    if (api.energy == nullptr) fc.missing("energy");
    else if (fc.ok("nvmlDeviceGetTotalEnergyConsumption", "energy", api.energy(d, &ull)))
      out.num("energyMj", static_cast<double>(ull));
  }
  if (api.temperature == nullptr) fc.missing("temperature");
  else if (fc.ok("nvmlDeviceGetTemperature", "temperature", api.temperature(d, NVML_TEMPERATURE_GPU, &v)))
    out.num("temperatureC", v);
  if (api.clock == nullptr) fc.missing("clocks");
  else {
    if (fc.ok("nvmlDeviceGetClockInfo", "smClock", api.clock(d, NVML_CLOCK_SM, &v))) out.num("smClockMhz", v);
    if (fc.ok("nvmlDeviceGetClockInfo", "memClock", api.clock(d, NVML_CLOCK_MEM, &v))) out.num("memClockMhz", v);
  }
  if (api.clockEventReasons == nullptr) fc.missing("clockEventReasons");
  else if (fc.ok("nvmlDeviceGetCurrentClocksEventReasons", "clockEventReasons", api.clockEventReasons(d, &ull)))
    out.num("clockEventReasons", static_cast<double>(ull));
  if (api.ecc == nullptr) fc.missing("ecc");
  else {
    if (fc.ok("nvmlDeviceGetTotalEccErrors", "ecc",
              api.ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ull)))
      out.num("eccCorrectedVolatile", static_cast<double>(ull));
    if (fc.ok("nvmlDeviceGetTotalEccErrors", "ecc",
              api.ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull)))
      out.num("eccUncorrectedVolatile", static_cast<double>(ull));
  }
  if (!counters.pcie) {
    if (api.pcie == nullptr) fc.missing("pcie");
    else {
      if (fc.ok("nvmlDeviceGetPcieThroughput", "pcie", api.pcie(d, NVML_PCIE_UTIL_TX_BYTES, &v)))
        out.num("pcieTxKBps", v);
      if (fc.ok("nvmlDeviceGetPcieThroughput", "pcie", api.pcie(d, NVML_PCIE_UTIL_RX_BYTES, &v)))
        out.num("pcieRxKBps", v);
    }
  }
  collectMigMode(fc, d, true);
  return out;
}

Record processRecord(unsigned int pid, unsigned long long used, unsigned int gi, unsigned int ci) {
  Record o;
  o.num("pid", pid);
  // NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot tell
  if (used != ~0ULL) o.num("usedMemoryBytes", static_cast<double>(used));
  if (gi != 0xFFFFFFFFu) o.num("gpuInstanceId", gi);
  if (ci != 0xFFFFFFFFu) o.num("computeInstanceId", ci);
  return o;
}

std::vector<Record> collectProcesses(nvmlDevice_t d) {
  std::vector<Record> out;
  if (api.procsV2 == nullptr && api.procsV1 == nullptr)
    throw tgFailure("TG_NVML_UNSUPPORTED", "nvmlDeviceGetComputeRunningProcesses is missing");
  for (int attempt = 0; attempt < 4; attempt++) {
    unsigned int count = 0;
    nvmlReturn_t r = api.procsV2 != nullptr ? api.procsV2(d, &count, nullptr) : api.procsV1(d, &count, nullptr);
    if (r == NVML_SUCCESS) return out;
    if (r != NVML_ERROR_INSUFFICIENT_SIZE) throw nvmlFailure("nvmlDeviceGetComputeRunningProcesses", r);
    count += 8;
    if (api.procsV2 != nullptr) {
      std::vector<nvmlProcessInfo_v2_t> infos(count);
      r = api.procsV2(d, &count, infos.data());
      if (r == NVML_ERROR_INSUFFICIENT_SIZE) continue;
      if (r != NVML_SUCCESS) throw nvmlFailure("nvmlDeviceGetComputeRunningProcesses_v3", r);
      for (unsigned int i = 0; i < count; i++)
        out.push_back(processRecord(infos[i].pid, infos[i].usedGpuMemory, infos[i].gpuInstanceId,
                                    infos[i].computeInstanceId));
    } else {
      std::vector<nvmlProcessInfo_v1_t> infos(count);
      r = api.procsV1(d, &count, infos.data());
      if (r == NVML_ERROR_INSUFFICIENT_SIZE) continue;
      if (r != NVML_SUCCESS) throw nvmlFailure("nvmlDeviceGetComputeRunningProcesses", r);
      for (unsigned int i = 0; i < count; i++)
        out.push_back(processRecord(infos[i].pid, infos[i].usedGpuMemory, 0xFFFFFFFFu, 0xFFFFFFFFu));
    }
    return out;
  }
  return out;
}

std::vector<Record> collectProcessUtilization(nvmlDevice_t d, unsigned long long since) {
  if (api.procUtil == nullptr) throw tgFailure("TG_NVML_UNSUPPORTED", "nvmlDeviceGetProcessUtilization is missing");
  std::vector<Record> out;
  unsigned int count = 0;
  nvmlReturn_t r = api.procUtil(d, nullptr, &count, since);
  if (r == NVML_ERROR_NOT_FOUND || (r == NVML_SUCCESS && count == 0)) return out;
  if (r != NVML_ERROR_INSUFFICIENT_SIZE && r != NVML_SUCCESS) throw nvmlFailure("nvmlDeviceGetProcessUtilization", r);
  count += 8;
  std::vector<nvmlProcessUtilizationSample_t> s(count);
  r = api.procUtil(d, s.data(), &count, since);
  if (r == NVML_ERROR_NOT_FOUND) return out;
  if (r != NVML_SUCCESS) throw nvmlFailure("nvmlDeviceGetProcessUtilization", r);
  for (unsigned int i = 0; i < count; i++) {
    Record o;
    o.num("pid", s[i].pid);
    o.num("timestampUs", static_cast<double>(s[i].timeStamp));
    o.num("smPct", s[i].smUtil);
    o.num("memPct", s[i].memUtil);
    o.num("encPct", s[i].encUtil);
    o.num("decPct", s[i].decUtil);
    out.push_back(o);
  }
  return out;
}

// ---- synchronous entry points ----

template <typename F> auto syncCall(Napi::Env env, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const Failure &failure) {
    throw toJsError(env, failure);
  }
}

Napi::Value DeviceInfo(const Napi::CallbackInfo &info) {
  int64_t i = indexArg(info);
  return syncCall(info.Env(), [&] { return collectDeviceInfo(i, handleAt(i)); }).toJs(info.Env());
}

Napi::Value Sample(const Napi::CallbackInfo &info) {
  int64_t i = indexArg(info);
  return syncCall(info.Env(), [&] { return collectSample(handleAt(i)); }).toJs(info.Env());
}

Napi::Value Processes(const Napi::CallbackInfo &info) {
  int64_t i = indexArg(info);
  return toJsArray(info.Env(), syncCall(info.Env(), [&] { return collectProcesses(handleAt(i)); }));
}

unsigned long long sinceArg(const Napi::Value v) {
  return v.IsNumber() ? static_cast<unsigned long long>(v.As<Napi::Number>().DoubleValue()) : 0ULL;
}

Napi::Value ProcessUtilization(const Napi::CallbackInfo &info) {
  int64_t i = indexArg(info);
  unsigned long long since = info.Length() > 1 ? sinceArg(info[1]) : 0ULL;
  return toJsArray(info.Env(), syncCall(info.Env(), [&] { return collectProcessUtilization(handleAt(i), since); }));
}

// ---- one sampling pass on the libuv thread pool ----

struct DeviceResult {
  int64_t index = 0;
  bool ok = false;
  Record sample;
  Failure failure;
  bool processesOk = false;
  std::vector<Record> processes;
  Failure processesFailure;
  bool utilOk = false;
  std::vector<Record> util;
  Failure utilFailure;
};

// samplePass(indices, { processes, processUtilization, sinceUs: number[] }) -> Promise<DeviceResult[]>: every NVML
// call of the pass runs off the event loop; only the conversion to JS objects runs on it.
class PassWorker : public Napi::AsyncWorker {
 public:
  // Device handles are resolved here, on the main thread: the pool thread never touches the shared handle table.
  PassWorker(Napi::Env env, std::vector<int64_t> indices, std::vector<unsigned long long> since, bool procs,
             bool util)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), indices_(std::move(indices)),
        since_(std::move(since)), procs_(procs), util_(util) {
    for (int64_t i : indices_) {
      try {
        devices_.push_back(handleAt(i));
        bad_.push_back(Failure());
      } catch (const Failure &f) {
        devices_.push_back(nullptr);
        bad_.push_back(f);
      }
    }
  }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    for (size_t k = 0; k < indices_.size(); k++) {
      DeviceResult res;
      res.index = indices_[k];
      if (devices_[k] == nullptr) {
        res.failure = bad_[k];
        results_.push_back(std::move(res));
        continue;
      }
      try {
        res.sample = collectSample(devices_[k]);
        res.ok = true;
      } catch (const Failure &f) {
        res.failure = f;
      }
      if (res.ok && procs_) {
        try {
          res.processes = collectProcesses(devices_[k]);
          res.processesOk = true;
        } catch (const Failure &f) {
          res.processesFailure = f;
        }
      }
      if (res.ok && util_) {
        try {
          res.util = collectProcessUtilization(devices_[k], k < since_.size() ? since_[k] : 0ULL);
          res.utilOk = true;
        } catch (const Failure &f) {
          res.utilFailure = f;
        }
      }
      results_.push_back(std::move(res));
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::Array arr = Napi::Array::New(env, results_.size());
    for (size_t k = 0; k < results_.size(); k++) {
      const DeviceResult &r = results_[k];
      Napi::Object o = Napi::Object::New(env);
      o.Set("index", Napi::Number::New(env, static_cast<double>(r.index)));
      if (r.ok) o.Set("sample", r.sample.toJs(env));
      else o.Set("error", toJsError(env, r.failure).Value());
      if (r.ok && procs_) {
        if (r.processesOk) o.Set("processes", toJsArray(env, r.processes));
        else o.Set("processesError", toJsError(env, r.processesFailure).Value());
      }
      if (r.ok && util_) {
        if (r.utilOk) o.Set("processUtilization", toJsArray(env, r.util));
        else o.Set("processUtilizationError", toJsError(env, r.utilFailure).Value());
      }
      arr.Set(static_cast<uint32_t>(k), o);
    }
    deferred_.Resolve(arr);
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<int64_t> indices_;
  std::vector<unsigned long long> since_;
  bool procs_;
  bool util_;
  std::vector<DeviceResult> results_;
  std::vector<nvmlDevice_t> devices_;
  std::vector<Failure> bad_;
};

Napi::Value SamplePass(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "samplePass(indices, options?) expected");
  Napi::Array idx = info[0].As<Napi::Array>();
  std::vector<int64_t> indices;
  for (uint32_t i = 0; i < idx.Length(); i++) indices.push_back(idx.Get(i).As<Napi::Number>().Int64Value());
  bool procs = false, util = false;
  std::vector<unsigned long long> since;
  if (info.Length() > 1 && info[1].IsObject()) {
    Napi::Object opts = info[1].As<Napi::Object>();
    procs = opts.Get("processes").ToBoolean().Value();
    util = opts.Get("processUtilization").ToBoolean().Value();
    Napi::Value s = opts.Get("sinceUs");
    if (s.IsArray()) {
      Napi::Array sa = s.As<Napi::Array>();
      for (uint32_t i = 0; i < sa.Length(); i++) since.push_back(sinceArg(sa.Get(i)));
    }
  }
  auto *w = new PassWorker(env, std::move(indices), std::move(since), procs, util);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
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

// At environment teardown (process exit, worker exit) a running event thread is stopped and joined before NVML
// and the addon go away.
void stopWatcherAtExit(void *) {
  EventWatcher *w = watcher;
  if (w == nullptr) return;
  w->stopping.store(true);
  if (w->thread.joinable()) w->thread.join();
}

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
  if (!initialized) throw plainError(env, "TG_NVML_NOT_INITIALIZED", "NVML is not initialized: call init() first");
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
    if (handles[i] == nullptr) continue;
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
  exports.Set("initAsync", Napi::Function::New(env, InitAsync));
  exports.Set("samplePass", Napi::Function::New(env, SamplePass));
  exports.Set("shutdown", Napi::Function::New(env, Shutdown));
  exports.Set("deviceCount", Napi::Function::New(env, DeviceCount));
  exports.Set("deviceInfo", Napi::Function::New(env, DeviceInfo));
  exports.Set("sample", Napi::Function::New(env, Sample));
  exports.Set("processes", Napi::Function::New(env, Processes));
  exports.Set("processUtilization", Napi::Function::New(env, ProcessUtilization));
  exports.Set("startEvents", Napi::Function::New(env, StartEvents));
  exports.Set("stopEvents", Napi::Function::New(env, StopEvents));
  exports.Set("errorString", Napi::Function::New(env, ErrorString));
  napi_add_env_cleanup_hook(env, stopWatcherAtExit, nullptr);
  return exports;
}

} // namespace

NODE_API_MODULE(tailguard_nvml, InitModule)
