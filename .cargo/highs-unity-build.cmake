# Read by CMake when the `highs-sys` build script configures HiGHS (CMAKE_TOOLCHAIN_FILE in
# .cargo/config.toml). HiGHS is compiled as a unity build, as its own CMake project does on
# macOS: its ~220 sources in batches of 8 per compiler run, so the headers they share are parsed
# once a batch. On two cores the library compiles in 138 s instead of 291 s (HiGHS 1.15,
# `cmake --build -j2` with the build script's flags, one build after the other); the compilers
# and their flags stay the ones the build script chooses.
set(CMAKE_UNITY_BUILD ON)
