# Adds our client to HDTN's own CMake build: build.sh configures HDTN's tree
# (HDTN_SRC) with -DCMAKE_PROJECT_HDTN_INCLUDE=this file, which CMake reads
# right after HDTN's project() (HDTN's CMakeLists include files relative to
# CMAKE_SOURCE_DIR, so HDTN must be the top-level project). Only this target
# and what it links (ltp_lib and its libraries) are built.
add_executable(dtnc-hdtn-ltp "${CMAKE_CURRENT_LIST_DIR}/dtnc-hdtn-ltp.cpp")
target_link_libraries(dtnc-hdtn-ltp PRIVATE ltp_lib)
