# SPDX-License-Identifier: MIT
# Included at install time (install(CODE) in CMakeLists.txt): writes quack.pc
# for the prefix being installed to, so `cmake --install --prefix DIR` and
# DESTDIR both give a correct file. Inputs: QK_PC_LIBDIR, QK_PC_INCLUDEDIR
# (relative to the prefix, or absolute), QK_PC_VERSION, QK_PC_NAME (module and
# library name), QK_PC_DESCRIPTION, QK_PC_IN, QK_PC_OUT.
foreach(v QK_PC_LIBDIR QK_PC_INCLUDEDIR)
  if(NOT IS_ABSOLUTE "${${v}}")
    set(${v} "\${prefix}/${${v}}")
  endif()
endforeach()
configure_file("${QK_PC_IN}" "${QK_PC_OUT}" @ONLY)
