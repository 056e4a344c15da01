"""The mutation benchmark's pure parts (bench/bench_mutations.py is the shell around them).

- `edits`: text edits at AST positions, applied to a file's text, and the patch they make;
- `operators`: semantic mutation operators over a function (flip a comparison, change a
  constant, swap arguments, drop a statement, ...), each a real change of the code;
- `sites`: where mutations go, per link kind (decompositions, meta registrations, Python
  references, nn.functional, ...), plus behaviour-free and other-device-only edits;
- `yaml_sites`: native_functions.yaml and derivatives.yaml entries;
- `catalog`: the deterministic choice of mutations (a seed) over all kinds;
- `truth`: which pairs to run for a mutation, and what counts as affected, caught or missed;
- `table`: the per-kind figures, side by side for the two selection modes.

Nothing here imports torch or does I/O: sources come in as text, results go out as data.
"""
