"""Shared per-file analyses, computed once in the engine's walk and asked by
every rule: name resolution (`scope`), distributed context (`distributed`),
call arguments (`calls`), literal values (`values`) and classes (`classes`)."""
