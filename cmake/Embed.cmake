# fleetsim_embed(TARGET OUT_CC NAMESPACE_FN FILES...)
# Generates a C++ source defining
#   std::span<const fleetsim::EmbeddedFile> FN();
# holding the bytes of each file, so the binary carries its data catalogues
# (model zoo, hardware, engines) and runs with no files beside it.
function(fleetsim_embed out_cc fn_name)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT ${out_cc}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cc} -DFN=${fn_name} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedScript.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/EmbedScript.cmake
    COMMENT "Embedding ${fn_name} data"
    VERBATIM)
endfunction()
