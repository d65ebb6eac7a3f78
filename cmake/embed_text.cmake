# cmake -DINPUT=file -DOUTPUT=header -DNAME=symbol -P embed_text.cmake
# Writes `static const char NAME[] = "...";` holding the text of INPUT.
file(READ ${INPUT} text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE ${OUTPUT} "// Generated from ${INPUT}\nstatic const char ${NAME}[] =\n\"${text}\";\n")
