# cmake -DIN=file -DOUT=header -DNAME=symbol -P scripts/embed.cmake
# Writes a C header holding the bytes of IN as `static const char NAME[]` (NUL-terminated), so
# a config file ships inside the binary (widen demo) without a second copy in the source tree.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by scripts/embed.cmake; do not edit */\nstatic const char ${NAME}[] = {${bytes}0x00};\n")
