# Flags shared by every target of the project (not exported to users).
add_library(stackcap_flags INTERFACE)
target_compile_options(stackcap_flags INTERFACE
  -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
  -Wall -Wextra -Wshadow -Wpointer-arith -Wcast-align -Wstrict-prototypes
  -Wmissing-prototypes -Wwrite-strings -Wformat=2 -Wundef -Wvla
  -Wno-unused-parameter)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  target_compile_options(stackcap_flags INTERFACE -Wlogical-op)
endif()
# Warnings as errors: CI turns it on (tools/test.sh); off by default so that
# a newer compiler's new warning does not break a user's build.
option(STACKCAP_WERROR "Treat warnings as errors" OFF)
if(STACKCAP_WERROR)
  target_compile_options(stackcap_flags INTERFACE -Werror)
endif()

if(STACKCAP_SANITIZE STREQUAL "address")
  set(_san -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  target_compile_definitions(stackcap_flags INTERFACE SC_SANITIZER_ADDRESS=1)
elseif(STACKCAP_SANITIZE STREQUAL "thread")
  set(_san -fsanitize=thread)
  target_compile_definitions(stackcap_flags INTERFACE SC_SANITIZER_THREAD=1)
elseif(NOT STACKCAP_SANITIZE STREQUAL "")
  message(FATAL_ERROR "STACKCAP_SANITIZE must be empty, 'address' or 'thread'")
endif()
if(STACKCAP_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "STACKCAP_FUZZ needs clang (libFuzzer); use the 'fuzz' preset")
  endif()
  # Every target is instrumented for the fuzzer; the walker's reads are
  # instrumented too in this build (SC_FUZZING), so the fuzzer sees them.
  set(_san -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined)
  target_compile_definitions(stackcap_flags INTERFACE SC_FUZZING=1 SC_SANITIZER_ADDRESS=1)
endif()
if(_san)
  target_compile_options(stackcap_flags INTERFACE ${_san})
  target_link_options(stackcap_flags INTERFACE ${_san})
endif()
