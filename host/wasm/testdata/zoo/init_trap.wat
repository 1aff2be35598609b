;; init_trap: a module whose start-up (_initialize) traps.
;; Build: wat2wasm init_trap.wat -o init_trap.wasm
(module
  (memory (export "memory") 1)
  (func (export "_initialize") unreachable)
  (func (export "ruled_abi_version") (result i32) (i32.const 65536)))
