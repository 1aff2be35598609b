;; missing_exports: speaks ABI v1 but exports nothing else.
;; Build: wat2wasm missing_exports.wat -o missing_exports.wasm
(module
  (memory (export "memory") 1)
  (func (export "ruled_abi_version") (result i32) (i32.const 65536)))
