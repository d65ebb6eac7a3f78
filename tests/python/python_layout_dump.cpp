// Prints gpuscope's built-in CPython layout for 3.MINOR as "name value"
// lines (the fields that layout_offsets.c prints from that version's
// headers; -1 for a field the version does not have), for check_layout.py.
#include <cstdio>
#include <cstdlib>

#include "python/python_layout.h"

int main(int argc, char** argv) {
  const auto* l = argc == 2 ? gpuscope::python::layout_for(static_cast<uint32_t>(std::atoi(argv[1]))) : nullptr;
  if (l == nullptr) {
    std::fprintf(stderr, "usage: python_layout_dump MINOR (a minor version gpuscope has a layout for)\n");
    return 2;
  }
  const struct {
    const char* name;
    long value;
  } fields[] = {{"minor", l->minor},
                {"thread_frame", l->thread_frame},
                {"thread_cframe", l->thread_cframe},
                {"cframe_frame", l->cframe_frame},
                {"frame_previous", l->frame_previous},
                {"frame_code", l->frame_code},
                {"frame_instruction", l->frame_instruction},
                {"frame_entry", l->frame_entry},
                {"shim_owner", l->shim_owner},
                {"code_bytecode", l->code_bytecode},
                {"code_filename", l->code_filename},
                {"code_name", l->code_name},
                {"code_first_line", l->code_first_line},
                {"code_line_table", l->code_line_table},
                {"ascii_size", l->ascii_size},
                {"compact_size", l->compact_size}};
  for (const auto& f : fields) std::printf("%s %ld\n", f.name, f.value);
  return 0;
}
