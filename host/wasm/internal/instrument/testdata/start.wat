;; start: a module with a start section. Instrumented, its start function
;; does not run at instantiation: it is exported as ruled_start, for the
;; host to call under a budget.
(module
  (memory 1)
  (global $g (mut i32) (i32.const 0))
  (func $init (global.set $g (i32.const 7)))
  (start $init)
  (func (export "get") (result i32) (global.get $g)))
