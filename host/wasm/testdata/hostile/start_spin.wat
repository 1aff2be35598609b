;; start_spin: a module whose start section loops forever (issue 21):
;; instantiating it must stop like any runaway call.
;; Build: wat2wasm start_spin.wat -o start_spin.wasm
(module
  (memory (export "memory") 1)
  (func $spin (loop $l (br $l)))
  (start $spin)
  (func (export "ruled_abi_version") (result i32) (i32.const 65536)))
