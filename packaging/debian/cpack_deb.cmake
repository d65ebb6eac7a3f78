# The .deb: `cpack -G DEB` in the build directory (docs/install.md).
# Runtime dependencies come from dpkg-shlibdeps on what the package holds, so
# they name exactly the Debian packages of the libraries the CLI links.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "gpuscope maintainers")
set(CPACK_PACKAGE_CONTACT "${GPUSCOPE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "find out why a GPU workload is slow (CUDA profiler)")
set(CPACK_PACKAGE_DESCRIPTION
    "gpuscope wraps any dynamically linked CUDA program with an LD_PRELOAD shim,
records every copy, synchronization, kernel launch and allocation with its
call site (and, on a real GPU, the device's activity through CUPTI), and
writes a compact, crash-safe trace per process. Its analyzer gives a verdict
(PCIe-, memory-, sync- or CPU-bound, healthy, or silent CPU fallback) with
the evidence, the call sites and the fix; it also exports timelines and
writes self-contained HTML reports.")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The CUDA driver and runtime come from the node (NVIDIA's packages or the
# program's own wheels), never from this package.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "")
include(CPack)
