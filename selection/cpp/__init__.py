"""ATen C++ for the selection: read, compare and link C++ definitions. Pure Python, no I/O.

- `tokens`, `scan`, `macros`, `declarators`, `reader`: `read_cpp(text, path) -> CppFile`, the
  definitions of one file (`items.CppItem`: name, kind, the names it calls and uses, the
  dispatch stubs it calls or registers, the kernels it defines), or the reason it could not
  be read.
- `diff`: two revisions of a file compared definition by definition (comments and layout do
  not count).
- `paths`: which paths are read (`native`, `autograd`, `core`) and which are another device's.
- `detect`: `detect_cpp(base_text, head_text, path, kind)` -> `CppChange`s (selection.model);
  `detect_cpp_file(...)` is the Detector's call.
- `native_index`, `corpus`, `reach`: from changed definitions to ATen ops through callers,
  native_functions.yaml and derivatives.yaml; used by the link kind selection.links.cpp.
- `blind_spot`: what release mode (wheels, no C++) cannot see, counted.
- `binary_calls`: which ATen ops a kernel of a release's `libtorch_cpu.so` calls through
  the dispatcher, over the call graph selection.sources.elf reads;
  `source_calls`: the same read from a clone's source. Both serve the link kind
  selection.links.native_calls.
"""
