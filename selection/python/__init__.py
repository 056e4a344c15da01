"""Python sources as an import-resolved graph of uses (pure).

`names`: module paths and dotted names. `summary`: one module's symbols, import bindings
and, per symbol, the uses it makes (calls, decorators, arguments, bases, references) with
other-device code left out. `resolver`: a use's dotted chain resolved through the module's
bindings, re-exports and star imports to the symbol it names, or to a collapsed subsystem.
"""
