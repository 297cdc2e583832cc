"""fa3lite.bench: the sequence-length benchmark (python -m fa3lite.bench --help).

Modules, one job each: grid (cells and shapes), flops (FA FLOP convention), impls (one adapter per
implementation), reference (fp32 reference and FA3's error rule), selfcheck (CPU self-check),
timing (CUDA events, L2 rotation), runner (check-then-time orchestration), compile_time and
compile_probe (fa3lite first-call compile time), envinfo (device and versions), results (records),
report (table, CSV, JSON), plots (PNG), progress (stderr bar), cli (arguments and main).
The --decode grid: decode_cases (cases, presets, byte arithmetic), decode_inputs (cache layouts, page
tables, reference), decode_impls (adapters), decode (check-then-time runner, copy bandwidth),
decode_report (its rows and table), decode_run (the --decode run).
Nothing here imports the GPU kernels until a run needs them.
"""
