# Cross toolchain for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu and the arm64
# multiarch libraries (dpkg --add-architecture arm64; apt-get install libhwy-dev:arm64 ...).
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake ...
# Binaries run under qemu-aarch64 without -L: the loader and libraries are found in
# /lib/aarch64-linux-gnu (with -L /usr/aarch64-linux-gnu threaded programs hang).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Multiarch: headers in /usr/include, libraries in /usr/lib/aarch64-linux-gnu; programs
# (flatc, protoc ...) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
