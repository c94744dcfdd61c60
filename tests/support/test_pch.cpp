// The program that owns the test programs' precompiled header (tests/CMakeLists.txt,
// TERN_TEST_PCH): the header is built with this target's settings and reused by every
// tern_add_test program. It has no tests of its own and is not run.
