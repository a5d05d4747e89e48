// The one source of stoker_test_pch, a test executable with no tests: it exists to build the
// precompiled gtest.h that every stoker_test target reuses (CMakeLists.txt, stoker_test).
