# CMake toolchain file: cross-compile a manipgen generated folder (its CMakeLists.txt) for a Cortex-M.
#   cmake -S generated/kuka_iiwa14 -B build/m7 -DCMAKE_TOOLCHAIN_FILE=runtime/target/arm-none-eabi.cmake \
#         -DMANIPGEN_CPU=cortex-m7 && cmake --build build/m7      -> build/m7/libkuka_iiwa14.a
# MANIPGEN_CPU: cortex-m4f or cortex-m33 (single-precision FPU: generate with --precision float) or
# cortex-m7 (double-precision FPU). The flags are those of runtime/target/Makefile.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_AR arm-none-eabi-ar)
# no host executables can be linked for a bare-metal target: test the compiler with a library
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(MANIPGEN_CPU "cortex-m7" CACHE STRING "cortex-m4f, cortex-m7 or cortex-m33")
if(MANIPGEN_CPU STREQUAL "cortex-m4f")
  set(_mg_arch "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
elseif(MANIPGEN_CPU STREQUAL "cortex-m7")
  set(_mg_arch "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16")
elseif(MANIPGEN_CPU STREQUAL "cortex-m33")
  set(_mg_arch "-mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16")
else()
  message(FATAL_ERROR "MANIPGEN_CPU must be cortex-m4f, cortex-m7 or cortex-m33, got '${MANIPGEN_CPU}'")
endif()
set(CMAKE_C_FLAGS_INIT "${_mg_arch} -ffunction-sections -fdata-sections -ffp-contract=off")
set(CMAKE_C_FLAGS_RELEASE_INIT "-O2")
set(CMAKE_BUILD_TYPE Release CACHE STRING "")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
