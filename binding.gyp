{
  "targets": [
    {
      "target_name": "tailguard_nvml",
      "sources": ["native/nvml-addon.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": ["-ldl"],
      "xcode_settings": { "GCC_ENABLE_CPP_EXCEPTIONS": "YES" }
    }
  ]
}
