;; Provides the global that globals.wat imports.
(module
  (memory 1)
  (global (export "base") i32 (i32.const 1000)))
