;; not_a_plugin: a valid module that is not a ruled plugin.
;; Build: wat2wasm not_a_plugin.wat -o not_a_plugin.wasm
(module
  (memory (export "memory") 1)
  (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1))))
